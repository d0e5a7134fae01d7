#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Reads a JUnit XML file with a real XML parser (the tests check that `tether test` writes
# well-formed XML) and prints what it holds as JSON: the counts the file states and, per
# testcase, its name, its <failure> messages, whether it was skipped and its report link.
import json
import sys
import xml.etree.ElementTree as ET

root = ET.parse(sys.argv[1]).getroot()
suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
out = {"root": root.tag, "tests": int(root.get("tests", -1)), "failures": int(root.get("failures", -1)),
       "skipped": int(root.get("skipped", 0)), "suites": len(suites), "testcases": []}
for suite in suites:
    for case in suite.iter("testcase"):
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        out["testcases"].append({
            "name": case.get("name"),
            "classname": case.get("classname"),
            "failures": [f.get("message") for f in case.findall("failure")],
            "skipped": case.find("skipped") is not None,
            "report": props.get("report"),
        })
print(json.dumps(out))
