# Read by CTest after the suites' tests are defined (tests/CMakeLists.txt adds it to
# TEST_INCLUDE_FILES last): each test in tests/test_costs.txt gets its measured seconds as
# its COST, so `ctest -j` starts the slowest first and the short ones fill in around them.
# A name no longer defined is ignored by set_tests_properties here. The plain add_test()
# tests (soak, fuzz, benchmarks) get their COST where they are added.
if(NOT EXISTS "${CMAKE_CURRENT_LIST_DIR}/test_costs.txt")
  return()
endif()
file(STRINGS "${CMAKE_CURRENT_LIST_DIR}/test_costs.txt" tether_cost_rows REGEX "^[0-9]")
foreach(row IN LISTS tether_cost_rows)
  string(FIND "${row}" "\t" tab)
  string(SUBSTRING "${row}" 0 ${tab} seconds)
  math(EXPR start "${tab} + 1")
  string(SUBSTRING "${row}" ${start} -1 name)
  set_tests_properties("${name}" PROPERTIES COST ${seconds})
endforeach()

# Tests that count a firmware's deadline misses exactly and mostly wait (each dropped step
# waits out a 300 ms deadline): with two processors of their own, at most one other test
# shares the cores, so a busy machine cannot push the firmware past the deadline and fake a
# miss (seen once in eight full runs at `ctest -j 3` while the fuzzers filled both cores).
set_tests_properties("adapters:link faults: a probability per step from the seed: the same seed, the same faulted steps"
                     PROPERTIES PROCESSORS 2)
# The same for the paced two-rig run whose second rig must not notice the first's broker going
# away (at most 75 of 1500 steps missed): with the mcu examples (two CPU-bound emulator runs)
# beside it at `ctest -j 3` it missed 214 steps (twice in a row); alone it passes
set_tests_properties("adapters:mqtt: two rigs behind bridged brokers in one lock-step, a rig's broker killed and back"
                     PROPERTIES PROCESSORS 2)
