// SPDX-License-Identifier: Apache-2.0
// A main() for the fuzz targets of tests/fuzz when they are not built with libFuzzer: the test
// suite links each target (LLVMFuzzerTestOneInput) with this file and the normal g++
// AddressSanitizer/UndefinedBehaviorSanitizer build, and runs
//
//   tether_fuzz_<target> [--runs N] [--max-seconds S] [--seed N] [--max-len N] [--dict FILE]
//                        [--timeout S] [--artifact-dir DIR] CORPUS_DIR_OR_FILE...
//
// It first runs every file of the given folders (sorted by name) and the given files, then N
// inputs made from them by seeded random mutations: bit flips, byte changes, inserts, deletes,
// copies inside one input, splices and crossovers of two corpus entries, dictionary tokens
// (libFuzzer's -dict format) inserted or put in place of a word. There is no coverage feedback;
// the same seed gives the same inputs on every machine, so a failure found here repeats.
// --max-len (default: 4096 or the largest corpus file, as libFuzzer) caps a mutated input.
//
// A broken invariant is an abort() in the target (or a sanitizer report, an uncaught
// exception, an input running longer than --timeout seconds): the driver then writes the input
// to DIR/crash-<name>-<hash> (reproduce with `tether_fuzz_<target> that-file`), says so on
// stderr and the process ends non-zero. --max-seconds stops the mutations early (0, the default,
// is no limit); the suite bounds runs by count so that it does the same work everywhere.
// docs/reliability.md ("What is fuzzed") lists the targets and how to run them with libFuzzer.

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
// present in sanitizer builds only
extern "C" void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

// Under g++ UndefinedBehaviorSanitizer is a library of its own that neither calls the death
// callback nor reads ASAN_OPTIONS: by default it should abort (so the handler below writes the
// input out) and print the stack. UBSAN_OPTIONS still overrides these.
extern "C" const char* __ubsan_default_options() { return "abort_on_error=1:print_stacktrace=1"; }

namespace {

using Bytes = std::vector<std::uint8_t>;

// ---- the input being run, for the crash handlers (async-signal-safe from here on) ----------

const std::uint8_t* g_data = nullptr;
std::size_t g_size = 0;
const char* g_what = "";  // "corpus file <path>" or "mutation"
char g_artifact_dir[1024] = ".";
char g_target_name[64] = "target";
volatile sig_atomic_t g_dumped = 0;
unsigned g_timeout_s = 0;

void say(const char* text) {
  const ssize_t ignored = write(2, text, std::strlen(text));
  (void)ignored;
}

void dump_input() {
  if (g_dumped || g_data == nullptr) return;
  g_dumped = 1;
  // FNV-1a of the input names the file
  std::uint64_t h = 1469598103934665603ull;
  for (std::size_t i = 0; i < g_size; ++i) h = (h ^ g_data[i]) * 1099511628211ull;
  char path[1200];
  std::size_t n = 0;
  auto put = [&](const char* s) {
    while (*s && n + 1 < sizeof path) path[n++] = *s++;
  };
  put(g_artifact_dir);
  put("/crash-");
  put(g_target_name);
  put("-");
  for (int shift = 60; shift >= 0; shift -= 4) {
    if (n + 1 < sizeof path) path[n++] = "0123456789abcdef"[(h >> shift) & 0xF];
  }
  path[n] = '\0';
  say("\nfuzz_driver: the target failed on ");
  say(g_what);
  const int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
  if (fd < 0) {
    say("; could not write the input to ");
    say(path);
    say("\n");
    return;
  }
  std::size_t done = 0;
  while (done < g_size) {
    const ssize_t w = write(fd, g_data + done, g_size - done);
    if (w <= 0) break;
    done += static_cast<std::size_t>(w);
  }
  close(fd);
  say("; the input is in ");
  say(path);
  say("\n");
}

void on_signal(int sig) {
  dump_input();
  if (sig == SIGALRM) {
    say("fuzz_driver: the input ran longer than the --timeout\n");
    _exit(3);
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

void on_sanitizer_death() { dump_input(); }

void run_one(const Bytes& input, const char* what) {
  // an allocation of exactly the input's size, so that AddressSanitizer sees reads past its end
  std::unique_ptr<std::uint8_t[]> copy(new std::uint8_t[input.size() + (input.empty() ? 1 : 0)]);
  if (!input.empty()) std::memcpy(copy.get(), input.data(), input.size());
  g_data = copy.get();
  g_size = input.size();
  g_what = what;
  if (g_timeout_s) alarm(g_timeout_s);
  LLVMFuzzerTestOneInput(copy.get(), input.size());
  if (g_timeout_s) alarm(0);
  g_data = nullptr;
  g_size = 0;
}

// ---- seeded mutations -----------------------------------------------------------------------

// splitmix64: the same numbers on every platform and standard library
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // 0 .. n-1 (n > 0)
  std::size_t below(std::size_t n) { return static_cast<std::size_t>(next() % n); }
  bool one_in(std::size_t n) { return below(n) == 0; }

 private:
  std::uint64_t state_;
};

bool word_byte(std::uint8_t c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '.' ||
         c == '-' || c == '+';
}

class Mutator {
 public:
  Mutator(const std::vector<Bytes>& corpus, const std::vector<Bytes>& dict, std::size_t max_len, std::uint64_t seed)
      : corpus_(corpus), dict_(dict), max_len_(max_len), rng_(seed) {}

  Bytes make() {
    Bytes b;
    // now and then keep walking from the previous mutant, else start again from a corpus entry
    if (!last_.empty() && rng_.one_in(4))
      b = last_;
    else if (!corpus_.empty())
      b = corpus_[rng_.below(corpus_.size())];
    const std::size_t steps = rng_.one_in(8) ? 1 + rng_.below(16) : 1 + rng_.below(4);
    for (std::size_t i = 0; i < steps; ++i) mutate(b);
    if (b.size() > max_len_) b.resize(max_len_);
    last_ = b;
    return b;
  }

 private:
  const Bytes& other() { return corpus_[rng_.below(corpus_.size())]; }

  std::uint8_t interesting_byte() {
    static const std::uint8_t values[] = {0x00, 0x01, 0x02, 0x7F, 0x80, 0xFE, 0xFF, '\n', '\r', '\t', ' ', '"',
                                          '\'', ':',  ',',  '-',  '[',  ']',  '{',  '}',  '&',  '*',  '!', '#',
                                          '|',  '>',  '%',  '\\', '0',  '9',  'e',  '.',  '?',  '@',  '`'};
    return values[rng_.below(sizeof values)];
  }

  void mutate(Bytes& b) {
    switch (rng_.below(b.empty() ? 3 : 13)) {
      case 0: {  // insert bytes: random, one repeated, or interesting
        const std::size_t at = rng_.below(b.size() + 1);
        const std::size_t n = 1 + rng_.below(rng_.one_in(8) ? 128 : 8);
        const int style = static_cast<int>(rng_.below(3));
        const std::uint8_t fill = interesting_byte();
        Bytes ins(n);
        for (auto& c : ins)
          c = style == 0 ? static_cast<std::uint8_t>(rng_.next()) : style == 1 ? fill : interesting_byte();
        b.insert(b.begin() + static_cast<std::ptrdiff_t>(at), ins.begin(), ins.end());
        break;
      }
      case 1:  // insert a dictionary token
        if (!dict_.empty()) {
          const Bytes& t = dict_[rng_.below(dict_.size())];
          b.insert(b.begin() + static_cast<std::ptrdiff_t>(rng_.below(b.size() + 1)), t.begin(), t.end());
        }
        break;
      case 2:  // splice in a piece of another corpus entry
        if (!corpus_.empty()) {
          const Bytes& o = other();
          if (o.empty()) break;
          const std::size_t from = rng_.below(o.size());
          const std::size_t n = 1 + rng_.below(std::min<std::size_t>(o.size() - from, 256));
          b.insert(b.begin() + static_cast<std::ptrdiff_t>(rng_.below(b.size() + 1)),
                   o.begin() + static_cast<std::ptrdiff_t>(from), o.begin() + static_cast<std::ptrdiff_t>(from + n));
        }
        break;
      case 3:  // flip one bit
        b[rng_.below(b.size())] ^= static_cast<std::uint8_t>(1u << rng_.below(8));
        break;
      case 4:  // set a byte
        b[rng_.below(b.size())] = rng_.one_in(2) ? interesting_byte() : static_cast<std::uint8_t>(rng_.next());
        break;
      case 5: {  // delete a range
        const std::size_t at = rng_.below(b.size());
        const std::size_t n = 1 + rng_.below(std::min<std::size_t>(b.size() - at, rng_.one_in(4) ? 512 : 16));
        b.erase(b.begin() + static_cast<std::ptrdiff_t>(at), b.begin() + static_cast<std::ptrdiff_t>(at + n));
        break;
      }
      case 6: {  // copy a range of this input to another place (inserted)
        const std::size_t from = rng_.below(b.size());
        const std::size_t n = 1 + rng_.below(std::min<std::size_t>(b.size() - from, 128));
        const Bytes piece(b.begin() + static_cast<std::ptrdiff_t>(from),
                          b.begin() + static_cast<std::ptrdiff_t>(from + n));
        b.insert(b.begin() + static_cast<std::ptrdiff_t>(rng_.below(b.size() + 1)), piece.begin(), piece.end());
        break;
      }
      case 7: {  // overwrite a range with another range of this input
        const std::size_t from = rng_.below(b.size());
        const std::size_t to = rng_.below(b.size());
        const std::size_t n = 1 + rng_.below(std::min<std::size_t>(b.size() - std::max(from, to), 64));
        std::memmove(b.data() + to, b.data() + from, n);
        break;
      }
      case 8: {  // put a dictionary token in place of the word (letters, digits, _.+-) at a position
        if (dict_.empty()) break;
        std::size_t start = rng_.below(b.size());
        std::size_t end = start;
        while (start > 0 && word_byte(b[start - 1])) --start;
        while (end < b.size() && word_byte(b[end])) ++end;
        if (end == start) end = start + 1;
        const Bytes& t = dict_[rng_.below(dict_.size())];
        b.erase(b.begin() + static_cast<std::ptrdiff_t>(start), b.begin() + static_cast<std::ptrdiff_t>(end));
        b.insert(b.begin() + static_cast<std::ptrdiff_t>(start), t.begin(), t.end());
        break;
      }
      case 9: {  // add a small number to a little-endian integer of 1, 2, 4 or 8 bytes
        const std::size_t width = std::size_t{1} << rng_.below(4);
        if (b.size() < width) break;
        const std::size_t at = rng_.below(b.size() - width + 1);
        std::uint64_t v = 0;
        for (std::size_t i = 0; i < width; ++i) v |= std::uint64_t{b[at + i]} << (8 * i);
        const std::uint64_t delta = 1 + rng_.below(16);
        v = rng_.one_in(2) ? v + delta : v - delta;
        if (rng_.one_in(8)) v = rng_.one_in(2) ? ~std::uint64_t{0} : std::uint64_t{1} << (8 * width - 1);
        for (std::size_t i = 0; i < width; ++i) b[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
        break;
      }
      case 10: {  // crossover: this input's head, another entry's tail
        if (corpus_.empty()) break;
        const Bytes& o = other();
        const std::size_t head = rng_.below(b.size() + 1);
        const std::size_t tail = o.empty() ? 0 : rng_.below(o.size() + 1);
        b.resize(head);
        b.insert(b.end(), o.begin() + static_cast<std::ptrdiff_t>(tail), o.end());
        break;
      }
      case 11:  // cut the end off
        b.resize(rng_.below(b.size()));
        break;
      case 12: {  // repeat a range many times (deep nesting, long lines, big counts)
        const std::size_t from = rng_.below(b.size());
        const std::size_t n = 1 + rng_.below(std::min<std::size_t>(b.size() - from, 8));
        const Bytes piece(b.begin() + static_cast<std::ptrdiff_t>(from),
                          b.begin() + static_cast<std::ptrdiff_t>(from + n));
        const std::size_t times = 2 + rng_.below(rng_.one_in(4) ? 2000 : 64);
        Bytes rep;
        for (std::size_t i = 0; i < times && rep.size() < max_len_; ++i)
          rep.insert(rep.end(), piece.begin(), piece.end());
        b.insert(b.begin() + static_cast<std::ptrdiff_t>(from), rep.begin(), rep.end());
        break;
      }
    }
  }

  const std::vector<Bytes>& corpus_;
  const std::vector<Bytes>& dict_;
  std::size_t max_len_;
  Rng rng_;
  Bytes last_;
};

// ---- files ----------------------------------------------------------------------------------

bool read_file(const std::filesystem::path& path, Bytes& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// libFuzzer's dictionary format: `name="token"` or `"token"` per line, \\ \" \xNN escapes, # comments
bool read_dict(const std::string& path, std::vector<Bytes>& out) {
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "fuzz_driver: cannot read the dictionary %s\n", path.c_str());
    return false;
  }
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    const std::size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    const std::size_t open = line.find('"');
    const std::size_t close = line.rfind('"');
    if (open == std::string::npos || close <= open) {
      std::fprintf(stderr, "fuzz_driver: %s:%d: expected a \"quoted\" token\n", path.c_str(), number);
      return false;
    }
    Bytes token;
    for (std::size_t i = open + 1; i < close; ++i) {
      if (line[i] != '\\') {
        token.push_back(static_cast<std::uint8_t>(line[i]));
      } else if (i + 1 < close && (line[i + 1] == '\\' || line[i + 1] == '"')) {
        token.push_back(static_cast<std::uint8_t>(line[++i]));
      } else if (i + 3 < close && line[i + 1] == 'x' && hex_value(line[i + 2]) >= 0 && hex_value(line[i + 3]) >= 0) {
        token.push_back(static_cast<std::uint8_t>(hex_value(line[i + 2]) * 16 + hex_value(line[i + 3])));
        i += 3;
      } else {
        std::fprintf(stderr, "fuzz_driver: %s:%d: bad escape\n", path.c_str(), number);
        return false;
      }
    }
    if (!token.empty()) out.push_back(std::move(token));
  }
  return true;
}

bool parse_number(const char* text, std::uint64_t& out) {
  char* end = nullptr;
  out = std::strtoull(text, &end, 10);
  return end != text && *end == '\0';
}

int usage() {
  std::fprintf(stderr,
               "usage: tether_fuzz_<target> [--runs N] [--max-seconds S] [--seed N] [--max-len N] [--dict FILE]\n"
               "                            [--timeout S] [--artifact-dir DIR] CORPUS_DIR_OR_FILE...\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t runs = 0, max_seconds = 0, seed = 1, max_len = 0, timeout_s = 30;
  std::string dict_path, artifact_dir = ".";
  std::vector<std::string> inputs;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--runs" && has_value) {
      if (!parse_number(argv[++i], runs)) return usage();
    } else if (arg == "--max-seconds" && has_value) {
      if (!parse_number(argv[++i], max_seconds)) return usage();
    } else if (arg == "--seed" && has_value) {
      if (!parse_number(argv[++i], seed)) return usage();
    } else if (arg == "--max-len" && has_value) {
      if (!parse_number(argv[++i], max_len)) return usage();
    } else if (arg == "--timeout" && has_value) {
      if (!parse_number(argv[++i], timeout_s)) return usage();
    } else if (arg == "--dict" && has_value) {
      dict_path = argv[++i];
    } else if (arg == "--artifact-dir" && has_value) {
      artifact_dir = argv[++i];
    } else if (!arg.empty() && arg[0] == '-') {
      return usage();
    } else {
      inputs.push_back(arg);
    }
  }
  if (inputs.empty()) return usage();

  std::snprintf(g_artifact_dir, sizeof g_artifact_dir, "%s", artifact_dir.c_str());
  std::snprintf(g_target_name, sizeof g_target_name, "%s", std::filesystem::path(argv[0]).filename().c_str());
  std::error_code ec;
  std::filesystem::create_directories(artifact_dir, ec);
  g_timeout_s = static_cast<unsigned>(std::min<std::uint64_t>(timeout_s, 86400));
  if (__sanitizer_set_death_callback) __sanitizer_set_death_callback(on_sanitizer_death);
  for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGALRM}) {
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    // AddressSanitizer installs its own SIGSEGV/SIGBUS handler; keep it (it calls the death callback)
    struct sigaction old;
    if (sigaction(sig, nullptr, &old) == 0 && old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN &&
        sig != SIGALRM && sig != SIGABRT)
      continue;
    sigaction(sig, &sa, nullptr);
  }

  std::vector<Bytes> dict;
  if (!dict_path.empty() && !read_dict(dict_path, dict)) return 2;

  // the corpus: folders (their files, sorted by name) and single files, in the order given
  std::vector<std::string> names;
  for (const auto& in : inputs) {
    if (std::filesystem::is_directory(in)) {
      std::vector<std::string> files;
      for (const auto& e : std::filesystem::directory_iterator(in))
        if (e.is_regular_file()) files.push_back(e.path().string());
      std::sort(files.begin(), files.end());
      names.insert(names.end(), files.begin(), files.end());
    } else if (std::filesystem::is_regular_file(in)) {
      names.push_back(in);
    } else {
      std::fprintf(stderr, "fuzz_driver: %s is neither a folder nor a file\n", in.c_str());
      return 2;
    }
  }
  std::vector<Bytes> corpus;
  const auto start = std::chrono::steady_clock::now();
  for (const auto& name : names) {
    Bytes b;
    if (!read_file(name, b)) {
      std::fprintf(stderr, "fuzz_driver: cannot read %s\n", name.c_str());
      return 2;
    }
    const std::string what = "corpus file " + name;
    run_one(b, what.c_str());
    corpus.push_back(std::move(b));
  }

  // as libFuzzer: without --max-len, mutants grow to 4096 bytes or the largest corpus file
  if (max_len == 0) {
    max_len = 4096;
    for (const Bytes& b : corpus) max_len = std::max<std::uint64_t>(max_len, b.size());
  }
  Mutator mutator(corpus, dict, static_cast<std::size_t>(max_len), seed);
  std::uint64_t done = 0;
  bool out_of_time = false;
  for (; done < runs; ++done) {
    if (max_seconds && (done & 63) == 0 &&
        std::chrono::steady_clock::now() - start >= std::chrono::seconds(static_cast<long long>(max_seconds))) {
      out_of_time = true;
      break;
    }
    const Bytes b = mutator.make();
    run_one(b, "a mutated input");
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("fuzz_driver: %zu corpus files, %llu of %llu mutated inputs (seed %llu)%s, %.1f s, %.0f exec/s\n",
              corpus.size(), static_cast<unsigned long long>(done), static_cast<unsigned long long>(runs),
              static_cast<unsigned long long>(seed), out_of_time ? ", stopped by --max-seconds" : "", seconds,
              seconds > 0 ? static_cast<double>(corpus.size() + done) / seconds : 0.0);
  return 0;
}
