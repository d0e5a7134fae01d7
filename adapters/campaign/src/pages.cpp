// SPDX-License-Identifier: Apache-2.0
// A campaign's results for people and CI: junit.xml, index.html and the verdict table
// `tether test` prints.
#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tether/campaign/campaign.hpp"
#include "tether/scenario/config.hpp"
#include "text_util.hpp"

namespace tether::campaign {

namespace {

std::string xml_escape(const std::string& text) {
  // line breaks stay; other control bytes and bytes that are not UTF-8 become \xNN (XML
  // 1.0 allows no control characters but tab and line breaks)
  std::string safe;
  for (std::size_t from = 0;;) {
    const std::size_t nl = text.find('\n', from);
    safe += runtime::printable(text.substr(from, nl == std::string::npos ? std::string::npos : nl - from));
    if (nl == std::string::npos) break;
    safe += '\n';
    from = nl + 1;
  }
  std::string out;
  for (const char ch : safe) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += ch;
    }
  }
  return out;
}

// the group a run belongs to in the matrix: what varies besides the seed
std::string group_of(const RunResult& r) {
  std::string g;
  for (const char* key : {"scenario", "firmware", "variant", "fault_set"}) {
    if (!r.plan.labels.contains(key) || !r.plan.labels[key].is_string()) continue;
    g += (g.empty() ? "" : ", ") + std::string(std::string_view(key) == "fault_set" ? "faults" : key) + " " +
         r.plan.labels[key].get<std::string>();
  }
  return g.empty() ? "every run" : g;
}

// one cell of the matrix: the runs of a group that judged one expectation
struct Cell {
  std::size_t passed = 0, failed = 0, skipped = 0;
  std::optional<double> margin;  // the least over the runs
  const RunResult* worst = nullptr;
};

std::string margin_text(double m) {
  if (m == 0) m = 0;  // -0 (an `==` that held exactly) reads as 0
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", m);
  return buf;
}

// fault set (and scenario, firmware, variant) x expectation: how many runs passed it and
// the least margin any of them kept (negative: the most it failed by), linking to that run
std::string matrix_html(const CampaignResult& result, const std::string& dir) {
  RelativeTo rel(dir);
  std::vector<std::string> groups, names;
  std::map<std::pair<std::string, std::string>, Cell> cells;
  std::map<std::string, std::pair<std::size_t, std::size_t>> runs;  // group -> passed, runs
  for (const auto& r : result.runs) {
    if (r.plan.replay) continue;
    const std::string g = group_of(r);
    if (std::find(groups.begin(), groups.end(), g) == groups.end()) groups.push_back(g);
    runs[g].first += r.verdict == RunVerdict::pass;
    ++runs[g].second;
    for (const auto& e : r.expectations) {
      if (std::find(names.begin(), names.end(), e.name) == names.end()) names.push_back(e.name);
      Cell& c = cells[{g, e.name}];
      c.passed += e.verdict == "PASS";
      c.failed += e.verdict == "FAIL";
      c.skipped += e.verdict == "SKIPPED";
      if (e.margin && (!c.margin || *e.margin < *c.margin)) {
        c.margin = e.margin;
        c.worst = &r;
      }
    }
  }
  if (names.empty()) return "";
  const auto h = [](const std::string& s) { return xml_escape(s); };
  std::ostringstream o;
  o << "<h2>Expectations by fault set</h2>\n<p>Each cell: the runs that passed the expectation of those that "
       "judged it, and its <b>margin</b> &mdash; the least distance any run's worst value kept inside the "
       "condition, in the value's unit (negative: the most it failed by); the link opens that run. Click a "
       "column's heading to sort by it.</p>\n<table class=\"matrix sortable\"><thead><tr><th>runs (all "
       "seeds)</th><th>passed</th>";
  for (const auto& n : names) o << "<th>" << h(n) << "</th>";
  o << "</tr></thead><tbody>\n";
  for (const auto& g : groups) {
    const auto [passed, total] = runs[g];
    o << "<tr><td data-v=\"" << h(g) << "\">" << h(g) << "</td><td data-v=\"" << passed << "\" class=\""
      << (passed == total ? "pass" : "fail") << "\">" << passed << " / " << total << "</td>";
    for (const auto& n : names) {
      const auto it = cells.find({g, n});
      if (it == cells.end()) {
        o << "<td data-v=\"\"></td>";
        continue;
      }
      const Cell& c = it->second;
      const std::size_t judged = c.passed + c.failed;
      o << "<td data-v=\"" << (c.margin ? margin_text(*c.margin) : "") << "\" class=\""
        << (c.failed ? "cfail"
            : judged ? "cpass"
                     : "cnone")
        << "\">" << c.passed << " / " << judged;
      if (c.skipped) o << " <small>(" << c.skipped << " skipped)</small>";
      if (c.margin) {
        o << "<br><small>margin ";
        const std::string report = c.worst ? rel(c.worst->report) : "";
        if (!report.empty())
          o << "<a href=\"" << h(report) << "\" title=\"" << h(c.worst->plan.name) << "\">" << margin_text(*c.margin)
            << "</a>";
        else
          o << margin_text(*c.margin);
        o << "</small>";
      }
      o << "</td>";
    }
    o << "</tr>\n";
  }
  o << "</tbody></table>\n";
  // sorting by a column: numbers as numbers, a second click the other way
  o << "<script>document.querySelectorAll('table.sortable th').forEach((th,i)=>th.addEventListener('click',()=>{"
       "const b=th.closest('table').tBodies[0];const up=th.dataset.up!=='1';th.dataset.up=up?'1':'0';"
       "const v=r=>r.cells[i].dataset.v;[...b.rows].sort((p,q)=>{const x=parseFloat(v(p)),y=parseFloat(v(q));"
       "const c=isNaN(x)||isNaN(y)?String(v(p)).localeCompare(String(v(q))):x-y;return up?c:-c})"
       ".forEach(r=>b.appendChild(r))}));</script>\n";
  return o.str();
}

}  // namespace

std::string junit_xml(const CampaignResult& result, const std::string& dir) {
  RelativeTo rel(dir);
  std::size_t failures = 0, skipped = 0;
  double time = 0;
  for (const auto& r : result.runs) {
    failures += r.verdict == RunVerdict::fail;
    skipped += r.verdict == RunVerdict::not_run;
    time += r.duration_s;
  }
  std::ostringstream x;
  x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x << "<testsuites name=\"" << xml_escape(result.name) << "\" tests=\"" << result.runs.size() << "\" failures=\""
    << failures << "\" errors=\"0\" skipped=\"" << skipped << "\" time=\"" << seconds_text(result.wall_s) << "\">\n";
  x << "  <testsuite name=\"" << xml_escape(result.name) << "\" tests=\"" << result.runs.size() << "\" failures=\""
    << failures << "\" errors=\"0\" skipped=\"" << skipped << "\" time=\"" << seconds_text(time) << "\""
    << (result.started.empty() ? "" : " timestamp=\"" + xml_escape(result.started) + "\"") << ">\n";
  x << "    <properties>\n";
  x << "      <property name=\"campaign_file\" value=\"" << xml_escape(result.file) << "\"/>\n";
  x << "      <property name=\"fingerprint\" value=\"" << xml_escape(result.fingerprint) << "\"/>\n";
  x << "      <property name=\"total_runs\" value=\"" << result.total_runs << "\"/>\n";
  if (result.shard)
    x << "      <property name=\"shard\" value=\"" << result.shard->first << "/" << result.shard->second << "\"/>\n";
  if (result.interrupted) x << "      <property name=\"interrupted\" value=\"true\"/>\n";
  x << "    </properties>\n";
  for (const auto& r : result.runs) {
    x << "    <testcase name=\"" << xml_escape(r.plan.name) << "\" classname=\"" << xml_escape(r.plan.classname)
      << "\" time=\"" << seconds_text(r.duration_s) << "\">\n";
    const std::string report = rel(r.report);
    const std::string log = rel(r.log);
    if (!report.empty() || !log.empty()) {
      x << "      <properties>\n";
      if (!report.empty()) x << "        <property name=\"report\" value=\"" << xml_escape(report) << "\"/>\n";
      if (!log.empty()) x << "        <property name=\"log\" value=\"" << xml_escape(log) << "\"/>\n";
      x << "      </properties>\n";
    }
    if (r.verdict == RunVerdict::not_run) {
      x << "      <skipped message=\"" << xml_escape(r.reason) << "\"/>\n";
    } else if (r.verdict == RunVerdict::fail) {
      // each failed expectation its own <failure>; a run that failed otherwise one with the reason
      for (const auto& f : r.failures)
        x << "      <failure type=\"expectation\" message=\"" << xml_escape(f.message()) << "\">"
          << xml_escape(f.message() + (r.reason.empty() ? "" : "\n" + r.reason)) << "</failure>\n";
      if (r.failures.empty())
        x << "      <failure type=\"" << (r.exit_code ? "exit " + std::to_string(*r.exit_code) : std::string("not run"))
          << "\" message=\"" << xml_escape(r.reason) << "\">" << xml_escape(r.reason) << "</failure>\n";
    }
    x << "      <system-out>";
    x << xml_escape("exit code: " + (r.exit_code ? std::to_string(*r.exit_code) : std::string("none")) +
                    (r.outcome.empty() ? "" : "\noutcome: " + r.outcome));
    if (!report.empty()) x << xml_escape("\nreport: " + report + "\n[[ATTACHMENT|" + report + "]]");
    if (!log.empty()) x << xml_escape("\nlog: " + log);
    x << "</system-out>\n";
    x << "    </testcase>\n";
  }
  x << "  </testsuite>\n</testsuites>\n";
  return x.str();
}

std::string index_html(const CampaignResult& result, const std::string& dir) {
  RelativeTo rel(dir);
  const auto h = [](const std::string& s) { return xml_escape(s); };
  std::ostringstream o;
  const bool pass = result.failed() == 0 && result.not_run() == 0 && result.runs.size() == result.total_runs;
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>campaign " << h(result.name)
    << (pass ? " passed" : " FAILED") << "</title>\n<style>\n"
    << "body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}\n"
    << "table{border-collapse:collapse;font-size:14px}td,th{border:1px solid #ccc;padding:3px 7px;text-align:left;"
       "vertical-align:top}\n"
    << "th{background:#f3f3f3}tr.pass td.v{background:#d9f2d9}tr.fail td.v{background:#f7d4d4;font-weight:bold}\n"
    << "tr.not_run td.v{background:#eee;color:#666}.big{font-size:1.3em}.pass{color:#176317}.fail{color:#a11}\n"
    << "code{font-size:13px}table.matrix td{text-align:right}table.matrix td:first-child{text-align:left}\n"
    << "td.cpass{background:#e3f4e3}td.cfail{background:#f7d4d4}td.cnone{color:#888}table.sortable th{cursor:pointer}\n"
    << "</style></head><body>\n";
  o << "<h1>Campaign " << h(result.name) << "</h1>\n";
  o << "<p class=\"big " << (pass ? "pass" : "fail") << "\">" << (pass ? "PASSED" : "FAILED") << ": " << result.passed()
    << " of " << result.total_runs << " runs passed, " << result.failed() << " failed";
  if (result.not_run() > 0) o << ", " << result.not_run() << " not run";
  if (result.runs.size() < result.total_runs && !result.shard)
    o << ", " << (result.total_runs - result.runs.size()) << " missing";
  o << "</p>\n<p>";
  o << "file <code>" << h(result.file) << "</code>";
  if (!result.started.empty()) o << ", started " << h(result.started);
  o << ", wall time " << seconds_text(result.wall_s) << " s";
  if (result.jobs > 0) o << " with " << result.jobs << (result.jobs == 1 ? " worker" : " workers");
  if (result.shard)
    o << "; shard " << result.shard->first << " of " << result.shard->second << " (" << result.runs.size() << " of "
      << result.total_runs << " runs)";
  if (!result.merged_from.empty()) {
    o << "; merged from";
    for (const auto& d : result.merged_from) o << " <code>" << h(rel(d)) << "</code>";
  }
  if (result.interrupted) o << "; <b>interrupted</b> (Ctrl-C or SIGTERM): runs not started are listed as not run";
  o << "; fingerprint <code>" << h(result.fingerprint) << "</code></p>\n";
  o << matrix_html(result, dir);
  o << "<h2>Runs</h2>\n<table>\n<tr><th>#</th><th>run</th><th>verdict</th><th>outcome</th><th>exit</th><th>time</th>"
       "<th>failed expectations, reason</th><th>report</th></tr>\n";
  for (const auto& r : result.runs) {
    o << "<tr class=\"" << to_string(r.verdict) << "\"><td>" << r.plan.index << "</td><td>" << h(r.plan.name)
      << "</td><td class=\"v\">"
      << (r.verdict == RunVerdict::pass   ? "PASS"
          : r.verdict == RunVerdict::fail ? "FAIL"
                                          : "not run")
      << "</td><td>" << h(r.outcome) << "</td><td>" << (r.exit_code ? std::to_string(*r.exit_code) : "") << "</td><td>"
      << (r.verdict == RunVerdict::not_run ? "" : seconds_text(r.duration_s) + " s") << "</td><td>";
    for (const auto& f : r.failures) o << h(f.message()) << "<br>";
    if (!r.reason.empty() && (r.failures.empty() || r.exit_code != 6)) o << h(r.reason);
    o << "</td><td>";
    const std::string report = rel(r.report);
    const std::string log = rel(r.log);
    if (!report.empty()) o << "<a href=\"" << h(report) << "\">" << (r.plan.replay ? "result" : "report") << "</a> ";
    if (!log.empty()) o << "<a href=\"" << h(log) << "\">log</a>";
    const std::string recording = rel(r.recording);
    if (!recording.empty()) o << " <a href=\"" << h(recording) << "\">recording</a>";
    o << "</td></tr>\n";
  }
  o << "</table>\n</body></html>\n";
  return o.str();
}

std::string verdict_table(const CampaignResult& result) {
  std::ostringstream o;
  std::size_t width = 3;
  for (const auto& r : result.runs) width = std::max(width, r.plan.name.size());
  width = std::min<std::size_t>(width, 60);
  char line[256];
  std::snprintf(line, sizeof line, "  %-5s %-7s %-4s %-22s %-*s %s\n", "#", "verdict", "exit", "outcome",
                static_cast<int>(width), "run", "failed expectations, reason");
  o << line;
  for (const auto& r : result.runs) {
    std::string why;
    for (const auto& f : r.failures) why += (why.empty() ? "" : "; ") + f.message();
    if (!r.reason.empty() && (r.failures.empty() || r.exit_code != 6)) why += (why.empty() ? "" : "; ") + r.reason;
    std::snprintf(line, sizeof line, "  %-5zu %-7s %-4s %-22s %-*s ", r.plan.index,
                  r.verdict == RunVerdict::pass   ? "PASS"
                  : r.verdict == RunVerdict::fail ? "FAIL"
                                                  : "-",
                  r.exit_code ? std::to_string(*r.exit_code).c_str() : "-", r.outcome.empty() ? "-" : r.outcome.c_str(),
                  static_cast<int>(width), r.plan.name.c_str());
    o << line << runtime::printable(why) << '\n';
  }
  return o.str();
}

}  // namespace tether::campaign
