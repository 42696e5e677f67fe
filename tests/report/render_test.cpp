// The four renderings agree with the table and hold their shape: aligned text,
// valid Markdown tables, JSON with every documented field, a self-contained
// HTML page whose SVG has no NaN in it.
#include "report/render.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>

namespace kb::report {
namespace {

using namespace kb::reward;  // a report is built on the scoring's types

std::string root() {
  const char* r = std::getenv("KB_SOURCE_ROOT");
  return r ? r : ".";
}

RunReport run250(const std::string& variant = "a") {
  RawInput raw;
  readPath(root() + "/testdata/reward/run250_" + variant + ".jsonl", raw);
  return aggregate(assemble(std::move(raw)), {});
}

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

TEST(Format, Numbers) {
  EXPECT_EQ(fmtPercent(90.0 / 99), "90.9%");
  EXPECT_EQ(fmtPercent(kNaN), "-");
  EXPECT_EQ(fmtSpeedup(2.114), "2.11x");
  EXPECT_EQ(fmtThreshold(1.5), "1.5");
  EXPECT_EQ(fmtThreshold(2), "2");
}

TEST(Format, Sources) {
  EXPECT_EQ(describeSources({"a.json", "b.json"}), "a.json, b.json");
  EXPECT_EQ(describeSources({"/w/r/a.json", "/w/r/b.json", "/w/r/c.json", "/w/r/d.json"}), "4 files under /w/r");
  EXPECT_EQ(describeSources({"/w/r/a.json", "/w/s/b.json", "/w/r/c.json", "/w/d.json"}), "4 files under /w");
  EXPECT_EQ(describeSources({"/w/a.json", "/x/b.json", "/y/c.json", "/z/d.json"}), "4 files");
  EXPECT_EQ(describeSources({"a.json", "b.json", "r/c.json", "/d.json"}), "4 files");
}

TEST(SummaryTable, HandComputedRow) {
  // Level 1 of the fixture: 90/99 pass, 60/99 and 30/99 faster, fast_p over
  // eager 90, 60, 30, 30 of 99, mean reward 171/99 = 1.727 (aggregate_test
  // derives each).
  Table t = summaryTable(run250());
  ASSERT_EQ(t.rows.size(), 4u);
  EXPECT_EQ(t.header.size(), 13u);
  std::vector<std::string> l1 = {"level 1", "100",   "1",     "90.9%", "60.6%", "30.3%", "1.30x",
                                 "0.92x",   "90.9%", "60.6%", "30.3%", "30.3%", "1.73"};
  EXPECT_EQ(t.rows[0], l1);
  EXPECT_EQ(t.rows[3][0], "all");
  EXPECT_TRUE(t.last_is_total);
}

TEST(Text, ColumnsAlign) {
  std::string s = renderText(run250());
  std::vector<std::string> ls = lines(s);
  // Title, scheme, blank, header, rule, 3 levels, rule, all, blank, note.
  ASSERT_GE(ls.size(), 10u);
  std::size_t width = ls[3].size();
  for (std::size_t i = 3; i <= 9; ++i) EXPECT_EQ(ls[i].size(), width) << ls[i];
  EXPECT_EQ(ls[3].rfind("group", 0), 0u);
  EXPECT_EQ(ls[9].rfind("all", 0), 0u);
  // Numbers are right-aligned: "90.9%" ends where its header "pass" ends.
  EXPECT_EQ(ls[5].find("90.9%") + 5, ls[3].find("pass") + 4);
}

TEST(Markdown, IsATable) {
  std::string md = renderMarkdown(run250());
  EXPECT_NE(md.find("| group | tasks | excluded | pass |"), std::string::npos);
  EXPECT_NE(md.find("| :--- | ---: |"), std::string::npos);
  EXPECT_NE(md.find("| level 2 | 100 | 2 | 91.8% |"), std::string::npos);
  EXPECT_NE(md.find("| **all** | **250** |"), std::string::npos);
  EXPECT_EQ(md.find("Warnings"), std::string::npos);  // a clean run has none
}

TEST(Json, ReportHasTheDocumentedFields) {
  Json j = reportToJson(run250());
  for (const char* k : {"tool", "stage", "version", "task_id", "solution_hash", "gpu", "driver",
                        "torch_version", "started_at", "finished_at", "status", "title", "scheme",
                        "rate_margin", "fast_p_thresholds", "primary_baseline", "timing_method",
                        "inputs", "groups", "overall", "tasks", "warnings"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_EQ(j["tool"], "kbreward");
  EXPECT_EQ(j["stage"], "report");
  EXPECT_EQ(j["status"], "ok");
  EXPECT_EQ(j["overall"]["scored"], 246);
  EXPECT_EQ(j["overall"]["correct"], 222);
  EXPECT_EQ(j["groups"].size(), 3u);
  EXPECT_EQ(j["groups"][0]["status_counts"]["compile_error"], 4);
  EXPECT_EQ(j["groups"][0]["fast_p"][2]["p"], 1.5);
  EXPECT_EQ(j["groups"][0]["fast_p"][2]["eager"], 30);
  EXPECT_EQ(j["tasks"].size(), 250u);
  EXPECT_EQ(j["tasks"][0]["status"], "compile_error");
  EXPECT_EQ(j["tasks"][0]["reward"], -1);
  EXPECT_TRUE(j["tasks"][0]["speedup_eager"].is_null());  // NaN is null
}

TEST(Json, ScoredCandidate) {
  RawInput raw;
  readPath(root() + "/testdata/reward/pair", raw);
  Input in = assemble(std::move(raw));
  Scheme s;
  Json j = scoreToJson(in.candidates[0], score(in.candidates[0], s), s);
  EXPECT_EQ(j["tool"], "kbreward");
  EXPECT_EQ(j["stage"], "score");
  EXPECT_EQ(j["task_id"], "kernelbench/level1/19_ReLU");
  EXPECT_EQ(j["status"], "ok");
  EXPECT_EQ(j["reward"], 3);
  EXPECT_EQ(j["speedup_eager"], 2.0);
  EXPECT_EQ(j["timing_method"], "cuda_events");
  EXPECT_EQ(j["scheme"]["name"], "milestone");
  EXPECT_EQ(j["timings"]["candidate"]["median_ms"], 1.2);
  EXPECT_TRUE(j["excluded"].is_null());
}

TEST(Html, SelfContainedWithCharts) {
  std::string h = renderHtml(run250());
  EXPECT_EQ(h.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(count(h, "<svg"), 6u);  // 2 distributions, 2 fast_p, task bars, status
  EXPECT_EQ(count(h, "<svg"), count(h, "</svg>"));
  EXPECT_EQ(h.find("<script"), std::string::npos);
  EXPECT_EQ(h.find("http://"), h.find("http://www.w3.org/2000/svg"));  // no external resource
  EXPECT_EQ(h.find("https://"), std::string::npos);
  EXPECT_EQ(h.find("\"nan"), std::string::npos);  // no NaN coordinate
  EXPECT_EQ(h.find("\"-nan"), std::string::npos);
  EXPECT_EQ(h.find("\"inf"), std::string::npos);
  EXPECT_NE(h.find("<td class=\"n\">90.9%</td>"), std::string::npos);
  EXPECT_NE(h.find("<tr class=\"total\"><td>all</td>"), std::string::npos);
}

TEST(Html, EscapesWhatItQuotes) {
  RawInput raw;
  parseText("{\"task_id\":\"<b>&x\",\"source\":\"a<b\",\"status\":\"ok\",\"timings\":{\"eager\":{\"median_ms\":2},"
            "\"compile\":{\"median_ms\":2},\"candidate\":{\"median_ms\":1}}}\n",
            "x", raw);
  ReportOptions o;
  o.title = "A & B <run>";
  std::string h = renderHtml(aggregate(assemble(std::move(raw)), o));
  EXPECT_EQ(h.find("<b>&x"), std::string::npos);
  EXPECT_NE(h.find("&lt;b&gt;&amp;x"), std::string::npos);
  EXPECT_NE(h.find("<title>A &amp; B &lt;run&gt;</title>"), std::string::npos);
}

// A speed-up past the axis's 128x end (KernelBench level2/14 and 18 reach
// 177x) is drawn at the edge with its value written on the bar.
TEST(Html, BarsCutAtTheAxisSayTheirValue) {
  RawInput raw;
  parseText("{\"task_id\":\"fast\",\"status\":\"ok\",\"timings\":{\"eager\":{\"median_ms\":177},"
            "\"compile\":{\"median_ms\":177},\"candidate\":{\"median_ms\":1}}}\n"
            "{\"task_id\":\"even\",\"status\":\"ok\",\"timings\":{\"eager\":{\"median_ms\":2},"
            "\"compile\":{\"median_ms\":2},\"candidate\":{\"median_ms\":2}}}\n",
            "x", raw);
  std::string h = renderHtml(aggregate(assemble(std::move(raw)), {}));
  EXPECT_EQ(count(h, "beyond the axis"), 1u);
  EXPECT_NE(h.find(">177.00x<title>fast: 177.00x, beyond the axis</title>"), std::string::npos);
  EXPECT_EQ(h.find("rotate(-90"), std::string::npos);  // two bars: wide enough to write across

  // 18 bars of about 50 px (the H200 eval of the reference set): side by
  // side, two "176.73x" labels across their bars touched; along them they
  // do not. 100 bars: an arrow.
  auto bars = [](int n) {
    std::string text = "{\"task_id\":\"fast\",\"status\":\"ok\",\"timings\":{\"eager\":{\"median_ms\":177},"
                       "\"compile\":{\"median_ms\":177},\"candidate\":{\"median_ms\":1}}}\n";
    for (int i = 1; i < n; ++i)
      text += "{\"task_id\":\"t" + std::to_string(i) + "\",\"status\":\"ok\",\"timings\":{\"eager\":{\"median_ms\":2},"
              "\"compile\":{\"median_ms\":2},\"candidate\":{\"median_ms\":2}}}\n";
    RawInput in;
    parseText(text, "x", in);
    return renderHtml(aggregate(assemble(std::move(in)), {}));
  };
  std::string along = bars(18);
  EXPECT_NE(along.find("rotate(-90"), std::string::npos);
  EXPECT_NE(along.find(">177.00x<title>fast: 177.00x, beyond the axis</title>"), std::string::npos);
  std::string arrow = bars(100);
  EXPECT_EQ(arrow.find("rotate(-90"), std::string::npos);
  EXPECT_NE(arrow.find("\u2191<title>fast: 177.00x, beyond the axis</title>"), std::string::npos);
}

TEST(Html, EmptyGroupsDrawNoNaN) {
  RawInput raw;
  parseText("{\"task_id\":\"a\",\"level\":1,\"status\":\"crash\"}\n{\"task_id\":\"b\",\"level\":2,\"status\":"
            "\"infra_error\"}\n",
            "x", raw);
  std::string h = renderHtml(aggregate(assemble(std::move(raw)), {}));
  EXPECT_EQ(h.find("nan"), std::string::npos);
  EXPECT_EQ(h.find("inf\""), std::string::npos);
  // Nothing correct, so nothing timed: one line instead of empty charts.
  EXPECT_NE(h.find("No correct task was timed"), std::string::npos);
  EXPECT_EQ(count(h, "<svg"), 1u);  // the status breakdown
}

// Issue 38: the main job's report (kbreward report --scheme correctness on
// CPU rollouts, nothing timed) had 29 SVG attributes set to "nan" and empty
// speed-up and fast_p sections. A correctness-only run draws no speed-up
// chart and says why in one line.
TEST(Html, CorrectnessOnlyRunDrawsNoSpeedups) {
  RawInput raw;
  parseText("{\"task_id\":\"l1_a\",\"level\":1,\"status\":\"ok\"}\n"
            "{\"task_id\":\"l1_b\",\"level\":1,\"status\":\"ok\"}\n"
            "{\"task_id\":\"l1_c\",\"level\":1,\"status\":\"incorrect\"}\n"
            "{\"task_id\":\"l2_a\",\"level\":2,\"status\":\"ok\"}\n"
            "{\"task_id\":\"l2_b\",\"level\":2,\"status\":\"compile_error\"}\n",
            "x", raw);
  ReportOptions o;
  o.scheme.kind = SchemeKind::Correctness;
  std::string h = renderHtml(aggregate(assemble(std::move(raw)), o));
  EXPECT_EQ(h.find("nan"), std::string::npos);
  EXPECT_EQ(h.find("inf\""), std::string::npos);
  EXPECT_EQ(h.find("<h2>Speed-up distribution"), std::string::npos);
  EXPECT_EQ(h.find("<h2>fast_p"), std::string::npos);
  EXPECT_EQ(h.find("<h2>Per task"), std::string::npos);
  EXPECT_NE(h.find("A correctness-only run: no task was timed"), std::string::npos);
  EXPECT_EQ(count(h, "<svg"), 1u);  // the status breakdown
  EXPECT_EQ(count(h, "<svg"), count(h, "</svg>"));
  EXPECT_NE(h.find("<h2>Status breakdown"), std::string::npos);
  EXPECT_NE(h.find("<h2>Tasks"), std::string::npos);
}

// Some correct tasks timed, some not (the correctness scheme reports
// whatever timings exist; here one task has no compile baseline and one no
// timings at all): the timed ones are drawn, the untimed are labelled and
// counted, and no coordinate is NaN.
TEST(Html, UntimedTasksAreLabelledNotDrawn) {
  RawInput raw;
  parseText("{\"task_id\":\"timed\",\"level\":1,\"status\":\"ok\",\"timings\":{\"eager\":{\"median_ms\":4},"
            "\"compile\":{\"median_ms\":3},\"candidate\":{\"median_ms\":1}}}\n"
            "{\"task_id\":\"eager_only\",\"level\":1,\"status\":\"ok\",\"timings\":{\"eager\":{\"median_ms\":2},"
            "\"candidate\":{\"median_ms\":1}}}\n"
            "{\"task_id\":\"plain\",\"level\":1,\"status\":\"ok\"}\n"
            "{\"task_id\":\"plain2\",\"level\":2,\"status\":\"ok\"}\n"
            "{\"task_id\":\"wrong\",\"level\":2,\"status\":\"incorrect\"}\n",
            "x", raw);
  ReportOptions o;
  o.scheme.kind = SchemeKind::Correctness;
  std::string h = renderHtml(aggregate(assemble(std::move(raw)), o));
  EXPECT_EQ(h.find("nan"), std::string::npos);
  EXPECT_EQ(h.find("inf\""), std::string::npos);
  EXPECT_EQ(count(h, "<svg"), 6u);  // 2 distributions, 2 fast_p, task bars, status
  // Per task over compile (the primary baseline): one bar (timed), three
  // labels (eager_only has no compile baseline), none drawn as a bar.
  EXPECT_NE(h.find("<title>timed (level 1): 3.00x</title></rect>"), std::string::npos);
  EXPECT_NE(h.find("<title>eager_only (level 1): correct, untimed</title>"), std::string::npos);
  EXPECT_NE(h.find("<title>plain (level 1): correct, untimed</title>"), std::string::npos);
  EXPECT_NE(h.find("<title>plain2 (level 2): correct, untimed</title>"), std::string::npos);
  EXPECT_EQ(h.find("plain (level 1): -"), std::string::npos);
  EXPECT_NE(h.find("1 correct tasks, fastest first (log scale); 3 correct and untimed, labelled; 1 not correct"),
            std::string::npos);
  // The distributions: the untimed counted beside their group.
  EXPECT_NE(h.find(">+1 untimed</text>"), std::string::npos);      // level 1 over eager: plain
  EXPECT_NE(h.find(">+2 untimed</text>"), std::string::npos);      // level 1 over compile
  EXPECT_NE(h.find(">1 correct, untimed</text>"), std::string::npos);  // level 2
  // The dots: the timed ones only.
  EXPECT_EQ(count(h, "<circle"), 3u + 2u * 4u);  // 2 over eager + 1 over compile, 4 fast_p marks per chart
}

TEST(Compare, RendersEveryFormat) {
  Comparison c = compare(run250("a"), run250("b"));
  std::string text = renderText(c);
  EXPECT_NE(text.find("fixed 4, broke 3, faster 30, slower 15"), std::string::npos);
  EXPECT_NE(renderMarkdown(c).find("| level 1 | pass rate | 90.9% | 94.9% | +4.0 pt |"), std::string::npos);
  Json j = comparisonToJson(c);
  EXPECT_EQ(j["changes"]["fixed"], 4);
  EXPECT_EQ(j["tasks"].size(), 250u);
  EXPECT_FALSE(j["a"].contains("tasks"));
  std::string h = renderHtml(c);
  EXPECT_EQ(count(h, "<svg"), 2u);
  EXPECT_EQ(h.find("\"nan"), std::string::npos);
  Table changed = changedTasksTable(c);
  ASSERT_FALSE(changed.rows.empty());
  EXPECT_EQ(changed.rows[0][2], "broke");  // what a reader acts on first
}

}  // namespace
}  // namespace kb::report
