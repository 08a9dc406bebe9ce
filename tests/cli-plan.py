#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`mem4d plan`: JSON that parses with the promised keys, CSV that agrees
with it, the built-in default job, constraints, --all, --svg, and one-line
errors with exit status 2. Usage: cli-plan.py PATH/TO/mem4d"""

import csv
import io
import json
import os
import subprocess
import sys
import tempfile
import xml.dom.minidom

CLI = sys.argv[1]
KEYS = ("tp", "cp", "pp", "dp", "mbs", "vpp", "recompute", "dist_opt", "peak_bytes",
        "verdict", "step_time_s", "tokens_per_s", "tflops_per_gpu")
JOB = ["--model", "llama3.1-8b", "--gpu", "h100-80", "--gpus", "16", "--seq", "4096", "--gbs", "128"]
failures = []


DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def run(*args, code=0):
    p = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=60)
    if p.returncode != code:
        failures.append(f"{args}: exit {p.returncode}, wanted {code}; stderr {p.stderr!r}")
    return p


def check(cond, what):
    if not cond:
        failures.append(what)


def plan_json(*extra):
    p = run("plan", *JOB, "--json", *extra)
    rows = json.loads(p.stdout)
    check(isinstance(rows, list), "--json is not an array")
    return rows


# JSON: the keys, their types, world = t*c*p*d, fastest first, fits only.
rows = plan_json("--top", "0")
check(len(rows) > 10, f"only {len(rows)} layouts")
for r in rows:
    missing = [k for k in KEYS if k not in r]
    check(not missing, f"missing keys {missing}")
    check(r["tp"] * r["cp"] * r["pp"] * r["dp"] == 16, f"world of {r}")
    check(r["verdict"] == "fits", f"verdict {r['verdict']} without --all")
    check(r["recompute"] in ("none", "selective", "full"), "recompute name")
    check(isinstance(r["dist_opt"], bool), "dist_opt is a boolean")
    check(r["tp"] * r["cp"] <= 8, "t*c crosses a node by default")
    # full mode's verdict: fits within full_fit_threshold_ppm (85%) of memory
    check(r["peak_bytes"] <= 0.85 * r["device_bytes"], "fits above 85%")
    check(r["attention_kernel"] == "cudnn" and r["softmax_fallback"] is False, f"attention of {r}")
# Which attention each row runs: on BigScience's fork of 2022-02 (softmax attention)
# the fused softmax declines some micro-batches and heads a rank and not others.
bs = plan_json("--top", "0", "--all", "--device-set", "stack=megatron-deepspeed-bigscience-2022-02", "--seq", "2048")
check({r["attention_kernel"] for r in bs} == {"unfused"}, "softmax attention on BigScience's stack")
check({r["softmax_fallback"] for r in bs} == {False, True}, "the fallback varies with the row's shape")
# The table and --csv say it too (they did not): a column where the rows differ, "unfused*"
# where the fallback runs, with a note; the header's "attention cudnn" where they agree. The
# CSV's two columns come last, after the columns scripts index.
BS = ["--top", "0", "--all", "--device-set", "stack=megatron-deepspeed-bigscience-2022-02", "--seq", "2048"]
text = run("plan", *JOB, *BS).stdout.splitlines()
check("attention" in text[3].split() and "unfused*: the stack's fused softmax declines" in "\n".join(text),
      f"the attention column: {text[:4]}")
cells = [ln.split()[ln.split().index("fits" if "fits" in ln else "tight" if "tight" in ln else "oom") - 3]
         for ln in text[4:] if ln.split()[0].isdigit()]
check(cells == [r["attention_kernel"] + "*" * r["softmax_fallback"] for r in bs], "the table's attention column")
head = run("plan", *JOB, "--top", "3").stdout.splitlines()
check(head[0].endswith(", full mode, attention cudnn") and "attention" not in head[3], f"one attention: {head[:4]}")
p = run("plan", *JOB, *BS, "--csv")
check(p.stdout.startswith("rank,tp,cp,pp,dp,mbs,vpp,recompute,dist_opt,first_stage_layers,last_stage_layers,"
                          "peak_bytes,device_bytes,verdict,step_time_s,tokens_per_s,tflops_per_gpu,mfu,"
                          "tokens_per_s_low,tokens_per_s_high,equivalent_to_fastest,attention_kernel,softmax_fallback,"
                          "ep,etp,moe_dispatcher\n"),
      "the CSV's columns: the attention's appended, then the experts'")
check([(c.get("attention_kernel"), c.get("softmax_fallback")) for c in csv.DictReader(io.StringIO(p.stdout))]
      == [(r["attention_kernel"], str(r["softmax_fallback"]).lower()) for r in bs], "the CSV's attention")
# Fastest first, but those equivalent to the fastest (bands overlapping its band) lead, by
# fewer model-parallel GPUs, then step time; then the rest by step time.
eq = [r for r in rows if r["equivalent_to_fastest"]]
check(len(eq) >= 1 and rows[:len(eq)] == eq, "the equivalent layouts lead")
fastest = min(rows, key=lambda r: r["step_time_s"])
check(fastest in eq, "the fastest is among the equivalent")
for r in rows:
    check(r["tokens_per_s_low"] < r["tokens_per_s"] < r["tokens_per_s_high"], "a band around tokens/s")
key = [(r["tp"] * r["cp"] * r["pp"], r["step_time_s"]) for r in eq]
check(key == sorted(key), "equivalent layouts by fewer model-parallel GPUs, then step time")
rest = [r["step_time_s"] for r in rows[len(eq):]]
check(rest == sorted(rest), "not fastest first after the equivalent ones")
# Equivalence compares with the band between layouts of one job (0.969-1.084, doc/perf.md,
# "Uncertainty"), whatever the device's printed band: a calibrated device marks the same
# layouts; a device's own speed_band_*_ppm replace both, so there the printed bands are
# the compared ones and equivalent means overlapping the fastest's.
cal = plan_json("--top", "0", "--device-set", "calibrated_runs=1")
check([r["equivalent_to_fastest"] for r in cal] == [r["equivalent_to_fastest"] for r in rows], "same equivalence")
cal = plan_json("--top", "0", "--device-set", "speed_band_low_ppm=969000", "--device-set",
                "speed_band_high_ppm=1084000")
check([r["equivalent_to_fastest"] for r in cal] == [r["equivalent_to_fastest"] for r in rows], "the same band")
fast = min(cal, key=lambda r: r["step_time_s"])
for r in cal:
    check(r["equivalent_to_fastest"] == (r["step_time_low_s"] <= fast["step_time_high_s"]), f"equivalence of {r}")
check(len(eq) < len(rows), "not every layout is equivalent")
check(len(plan_json("--top", "3")) == 3, "--top 3")
# --help says the order the rows come in: it said "fastest first", and the first row of
# llama3.1-70b on 64 H100 is tp 8 pp 2 at 65.3 s, the fastest tp 4 cp 2 pp 4 at 60.6 s 15th.
about = run("plan", "--help").stdout
check("fastest first by" not in about and "fewer model-parallel GPUs" in about, "plan --help on the order")
# The table and --help name the band equivalence compares with: they said "their speed
# bands overlap its band" beside the tokens/s band column, a measured run's, of which 307
# of llama3.1-8b's 835 rows on 8 H100 (seq 4096, gbs 64) overlap the fastest's and are not
# equivalent.
check("between layouts of one job" in " ".join(about.split()), "plan --help names the compared band")
note = run("plan", *JOB, "--top", "3").stdout
check("between layouts of one job" in note and "their speed bands overlap" not in note, f"the eq note: {note}")
own = run("plan", *JOB, "--top", "3", "--device-set", "speed_band_low_ppm=969000").stdout
check("their speed bands overlap its band, the device's" in own, f"the eq note with the device's band: {own}")
# MFU names the peak it is of, as estimate --json does (issue 21, item 4): an fp8 job's
# rows printed mfu 0.379 of H100's fp8 peak with no word of which peak.
for extra, peak, flops in (((), "bf16", 989.4e12), (("--set", "fp8=1"), "fp8", 1978.9e12)):
    for r in plan_json("--top", "3", *extra):
        check(r.get("mfu_peak") == peak and r.get("mfu_peak_flops") == flops, f"mfu_peak of {extra}: {r.get('mfu_peak')}")
        check(abs(r["mfu"] * r["mfu_peak_flops"] / (r["tflops_per_gpu"] * 1e12) - 1) < 1e-6, f"mfu of {extra}")
# The table's MFU is a percent, as estimate's and check's: it printed the fraction (0.551
# beside estimate's "MFU 55.1%"); --json and --csv keep the fraction.
lines = [ln.split() for ln in run("plan", *JOB, "--top", "3").stdout.splitlines() if ln[:4].lstrip(" ").isdigit()
         and ln.startswith(" ")]
mfus = [ln[ln.index("fits") + 2] for ln in lines]  # verdict, TFLOP/s, MFU
check(mfus == [f"{100 * r['mfu']:.1f}%" for r in rows[:3]], f"table MFU {mfus}, json {[r['mfu'] for r in rows[:3]]}")

# CSV lists the same layouts in the same order.
p = run("plan", *JOB, "--csv", "--top", "0")
table = list(csv.DictReader(io.StringIO(p.stdout)))
check(len(table) == len(rows), "csv and json lengths differ")
for c, j in zip(table, rows):
    check(all(str(j[k]) == c[k] for k in ("tp", "cp", "pp", "dp", "mbs", "vpp", "peak_bytes")), f"csv {c}")

# A model with experts: the CSV names each row's ep, etp and dispatcher, as --json and the table
# do. It left them out: 15 rows of Qwen3-30B-A3B's plan read the same (tp 4 cp 2 pp 2 dp 1 mbs 1
# vpp 8 full), differing only in the expert knobs the search varies.
MOE = ["--hf-config", os.path.join(DATA, "hf", "recent", "qwen3-30b-a3b.json"), "--gpus", "16", "--seq", "4096",
       "--gbs", "256", "--top", "0"]
moe_rows = json.loads(run("plan", *MOE, "--json").stdout)
moe_csv = list(csv.DictReader(io.StringIO(run("plan", *MOE, "--csv").stdout)))
check(len(moe_csv) == len(moe_rows) and len({r["ep"] for r in moe_rows}) > 1, "the MoE plan varies ep")
check([(c["ep"], c["etp"], c["moe_dispatcher"]) for c in moe_csv]
      == [(str(r["ep"]), str(r["etp"]), r["moe_dispatcher"]) for r in moe_rows], "the CSV's expert knobs")
KNOBS = ("tp", "cp", "pp", "dp", "mbs", "vpp", "recompute", "dist_opt", "first_stage_layers", "last_stage_layers",
         "ep", "etp", "moe_dispatcher")
check(len({tuple(c[k] for k in KNOBS) for c in moe_csv}) == len(moe_csv), "two CSV rows of one MoE plan read the same")

# Constraints: fixed, ranged and listed knobs.
for r in plan_json("--pp", "1", "--tp", "1-2", "--mbs", "1,2", "--recompute", "none", "--top", "0"):
    check(r["pp"] == 1 and r["tp"] <= 2 and r["mbs"] in (1, 2) and r["recompute"] == "none", f"constraint {r}")

# --all lists layouts that do not fit too, fitting ones first.
every = plan_json("--all")
verdicts = [r["verdict"] for r in every]
check(len(every) > len(rows) and "oom" in verdicts, "--all lists no oom layout")
order = {"fits": 0, "tight": 1, "oom": 2}
check([order[v] for v in verdicts] == sorted(order[v] for v in verdicts), "--all order")

# The built-in default job, with no arguments at all (and `mem4d` alone).
for argv in (["plan"], []):
    p = run(*argv)
    check("llama3.1-70b on 64 x h100-80" in p.stdout and "seq 8192, gbs 512" in p.stdout,
          f"default job of {argv}: {p.stdout[:200]!r}")
    check(" fits " in p.stdout, "the default job has a layout that fits")

# --svg draws the landscape as well-formed SVG.
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "plan.svg")
    run("plan", *JOB, "--svg", path)
    doc = xml.dom.minidom.parse(path)
    check(doc.documentElement.tagName == "svg", "not an svg")
    check(len(doc.getElementsByTagName("rect")) > 10, "svg has no cells")

# The landscape of a search of ~10,000 layouts: one cell per (cp, mbs, pp, tp)
# drawn, coloured by the best verdict of its layouts and labelled with the
# most TFLOP/s among them (or the peak), exactly as the rows of --all say.
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "many.svg")
    many = ["--model", "llama3.1-70b", "--gpus", "512", "--seq", "8192", "--gbs", "1024", "--mbs", "1,2,4",
            "--cross-node"]
    rows = list(csv.DictReader(io.StringIO(run("plan", *many, "--all", "--top", "0", "--csv").stdout)))
    run("plan", *many, "--svg", path)
    check(len(rows) > 5000, f"the landscape test searches many layouts: {len(rows)}")
    rank = {"fits": 0, "tight": 1, "oom": 2}
    best = {}
    for r in rows:
        key = tuple(int(r[k]) for k in ("cp", "mbs", "pp", "tp"))
        v, tf = rank[r["verdict"]], float(r["tflops_per_gpu"] or "-inf")
        if key not in best or (v, -tf) < (best[key][0], -best[key][1]):
            best[key] = (v, tf, int(r["peak_bytes"]))
    axes = [sorted({k[i] for k in best}) for i in range(4)]
    colours = {0: "#4caf50", 1: "#ffb300", 2: "#e53935"}
    want_fill, want_label = {}, {}
    for cp in axes[0]:
        for mbs in axes[1]:
            for pp in axes[2]:
                for tp in axes[3]:
                    b = best.get((cp, mbs, pp, tp))
                    fill = colours[b[0]] if b else "#e0e0e0"
                    want_fill[fill] = want_fill.get(fill, 0) + 1
                    if b:
                        label = f"{b[1]:.0f}" if b[0] < 2 else f"{b[2] / 2**30:.0f}G"
                        want_label[label] = want_label.get(label, 0) + 1
    doc = xml.dom.minidom.parse(path)
    got_fill, got_label = {}, {}
    for rect in doc.getElementsByTagName("rect")[1:]:  # the first is the background
        got_fill[rect.getAttribute("fill")] = got_fill.get(rect.getAttribute("fill"), 0) + 1
    for text in doc.getElementsByTagName("text"):
        if text.getAttribute("text-anchor") == "middle" and text.getAttribute("font-size") in ("9", "11"):
            label = text.firstChild.data
            got_label[label] = got_label.get(label, 0) + 1
    check(got_fill == want_fill, f"landscape cells by colour: {got_fill}, the rows say {want_fill}")
    check(got_label == want_label, "landscape labels differ from the rows' best TFLOP/s and peaks")

# Errors: one line on stderr, exit status 2.
for bad in (["--model", "no-such-model"], ["--gpu", "no-such-gpu"], ["--gpus", "x"], ["--tp", "8-1"],
            ["--mbs", "1,zero"], ["--bogus"], ["--top"], ["--set", "nokey=1"]):
    p = run("plan", *bad, code=2)
    check(p.stdout == "", f"{bad} printed to stdout")
    check(p.stderr.startswith("mem4d: ") and p.stderr.count("\n") >= 1, f"{bad}: {p.stderr!r}")

# Refused with one line naming the flag (each once accepted or unexplained).
hf = os.path.join(DATA, "hf", "llama3.1-8b.json")
for bad, needle in (
        (["--svg", ""], "mem4d: --svg needs a value"),
        (["--gbs", "0"], "mem4d: --gbs must be at least 1"),  # no step time: "Fastest first" with no speeds
        (["--gpus", "0"], "mem4d: --gpus must be at least 1"),
        (["--seq", "0x1000"], "mem4d: --seq needs a decimal number"),
        (["--tp", "0x2"], "mem4d: --tp: '0x2' is not a whole number from 1 to 4096"),
        # issue 24, item 14: every refusal states the bound or the accepted words
        (["--tp", "-8"], "mem4d: --tp: '-8' is not a whole number from 1 to 4096"),
        (["--tp", "0-4"], "mem4d: --tp 0 is out of range (1 to 4096)"),
        (["--tp", "4-2"], "mem4d: --tp 4-2 is an empty range: LO must not exceed HI"),
        (["--tp", "1,,2"], "mem4d: --tp: an empty value in the SPEC"),
        (["--recompute", "maybe"], "mem4d: --recompute: 'maybe' is not one of none, selective, full, op"),
        (["--gpus", "99999999999"], "mem4d: --gpus 99999999999 is out of range (1 to 16777216)"),
        # item 9: a cluster of 64 GPUs in nodes of 3 does not exist
        (["--gpus", "64", "--gpus-per-node", "3"],
         "mem4d: --gpus 64 is not a whole number of nodes of 3 GPUs (--gpus-per-node): 21 nodes hold 63, 22 nodes 66"),
        (["--json", "--csv"], "mem4d: --json and --csv contradict each other"),
        (["--csv", "--json"], "mem4d: --csv and --json contradict each other"),
        (["--hf-config", hf], "mem4d: --model and --hf-config contradict each other"),  # JOB has --model
        (["--gpu-memory-gib", "0.0000001"], "mem4d: --gpu-memory-gib needs a size in GiB"),
        (["--gpus-per-node", "0"], "mem4d: --gpus-per-node 0 is out of range (1 to 1024)")):
    p = run("plan", *JOB, *bad, code=2)
    check(p.stdout == "" and p.stderr.startswith(needle) and p.stderr.count("\n") == 1, f"{bad}: {p.stderr!r}")

# No valid layout at all is not "no layout fits": it says which rule the
# plainest split breaks (item 14).
p = run("plan", "--model", "llama3.1-8b", "--model-set", "num_layers=1", "--gpus", "7", "--seq", "1024", "--gbs", "3",
        code=1)
check("No layout is valid" in p.stdout and "global batch 3 is not divisible by micro-batch 1 x dp 7" in p.stdout
      and "Try more GPUs" not in p.stdout, f"no valid layout: {p.stdout!r}")

# A recompute mode the job's framework or mode does not model is said so, with exit status 2:
# "--recompute op" (torchtitan's op-level selective recompute policy) under Megatron said
# "No layout is valid ... the bounds given (--recompute op) exclude them"; listed beside
# modes that apply it is left out with a warning.
small = ["--model", "llama3.1-8b", "--gpus", "8", "--seq", "1024", "--gbs", "64", "--top", "1"]
for extra, needle in ((["--recompute", "op"], "mem4d: --recompute: recompute op is modelled for framework torchtitan "
                       "only, not megatron\n"),
                      (["--recompute", "full", "--mode", "paper"], "mem4d: --recompute: paper mode does not model "
                       "recompute full; use full mode\n")):
    p = run("plan", *small, *extra, code=2)
    check(p.stdout == "" and p.stderr == needle, f"{extra}: {p.stderr!r}")
p = run("plan", *small, "--recompute", "none,op", "--json")
check(p.stderr == "mem4d: warning: --recompute: recompute op is modelled for framework torchtitan only, not "
      "megatron; not searched\n" and json.loads(p.stdout)[0]["recompute"] == "none", f"none,op: {p.stderr!r}")
p = run("plan", *small, "--recompute", "op", "--framework", "torchtitan", "--json")
check(p.stderr == "" and json.loads(p.stdout)[0]["recompute"] == "op", f"op under torchtitan: {p.stderr!r}")

# Bounds that exclude every split are named, with the rule they break: "--tp 16" on 8 GPUs
# said only "the bounds given exclude them".
for extra, named in ((["--tp", "16"], "--tp 16"), (["--mbs", "1000"], "--mbs 1000"),
                     (["--tp", "3-3", "--pp", "1,2"], "--tp 3, --pp 1,2")):
    p = run("plan", "--model", "llama3.1-8b", "--gpus", "8", "--seq", "1024", "--gbs", "64", *extra, code=1)
    check("No layout is valid" in p.stdout and f"the bounds given ({named}) exclude them" in p.stdout
          and "tp x cp x pp x dp = 8" in p.stdout, f"bounds named: {p.stdout!r}")

# The estimates' warnings are said once, on stderr (the rows' JSON stays JSON): an fp8 plan
# on an A100 and a device whose NVLink bandwidth is unknown were ranked in silence.
for extra, needle in ((["--gpu", "a100-80", "--set", "fp8=1"], "mem4d: warning: fp8: the device has no fp8 peak"),
                      (["--device-set", "intra_node_bandwidth=0"], "mem4d: warning: intra_node_bandwidth is 0")):
    for fmt in ([], ["--json"]):
        p = run("plan", "--model", "llama3.1-8b", "--gpus", "8", "--seq", "4096", "--gbs", "64", "--top", "3", *extra, *fmt)
        check(p.stderr.count(needle) == 1, f"plan {extra} {fmt}: warning once: {p.stderr!r}")
        if fmt:
            check(len(json.loads(p.stdout)) == 3, "the JSON after a warning")
p = run("plan", *JOB, "--top", "3")
check(p.stderr == "", f"no warning for a plain plan: {p.stderr!r}")
# A warning whose figure differs by row (each layout's MFU above 100%, Megatron's count, the
# work run below the peak) is said once too, the first row's: it was said for each of four
# rows, and filled the warnings kept. Nothing here runs past the peak (attention at the GEMMs'
# rate, which is the peak): no "above the peak".
p = run("plan", "--model", "llama3.1-8b", "--gpus", "8", "--seq", "131072", "--gbs", "8", "--top", "3", "--all",
        "--device-set", "matmul_efficiency_ppm=1000000", "--device-set", "attention_efficiency_ppm=1000000")
check(p.stderr.count("is Megatron's count") == 1 and "above the peak" not in p.stderr, f"MFU note once: {p.stderr!r}")
# Past the peak (attention at twice the GEMMs' rate) the warning is said once, the same way.
p = run("plan", "--model", "llama3.1-8b", "--gpus", "8", "--seq", "131072", "--gbs", "8", "--top", "3", "--all",
        "--device-set", "matmul_efficiency_ppm=1000000", "--device-set", "attention_efficiency_ppm=2000000")
check(p.stderr.count("above the peak") == 1, f"MFU warning once: {p.stderr!r}")

# A dispatcher the GPU cannot run, the only one listed, is the reason given:
# HybridEP before Hopper (an A100) and on an AMD GPU (doc/perf.md, "What the
# flex dispatchers run on").
for gpu, word in (("a100-80", "before Hopper"), ("mi300x-192", "no ROCm port")):
    p = run("plan", "--model", "qwen2-57b-a14b", "--gpus", "16", "--seq", "1024", "--gbs", "16", "--gpu", gpu,
            "--dispatcher", "hybridep", code=1)
    check("No layout is valid" in p.stdout and "HybridEP" in p.stdout and word in p.stdout,
          f"hybridep on {gpu}: {p.stdout!r}")

# A failed write of the landscape is an error that says so.
if os.path.exists("/dev/full"):
    p = run("plan", *JOB, "--svg", "/dev/full", code=2)
    check("mem4d: --svg: cannot write '/dev/full'" in p.stderr, f"--svg /dev/full: {p.stderr!r}")

# The importer's warnings reach stderr ("model_type" missing: read as Llama).
with tempfile.TemporaryDirectory() as tmp, open(hf) as f:
    doc = json.load(f)
    del doc["model_type"]
    path = os.path.join(tmp, "config.json")
    with open(path, "w") as out:
        json.dump(doc, out)
    p = run("plan", "--hf-config", path, "--gpus", "8", "--top", "1")
    check(p.stderr == 'mem4d: warning: config.json has no "model_type"; read as a Llama-like model\n',
          f"hf-config warning: {p.stderr!r}")

# Nothing fits: an empty array and exit status 1.
p = run("plan", "--model", "llama3.1-405b", "--gpus", "8", "--json", code=1)
check(json.loads(p.stdout) == [], "no-fit json")
# With --all too, as --help says (a scheduler reads the status): it listed the rows that do
# not fit and exited 0.
p = run("plan", "--model", "llama3.1-405b", "--gpus", "8", "--json", "--all", "--top", "3", code=1)
check([r["verdict"] for r in json.loads(p.stdout)] == ["oom"] * 3, "no-fit --all json lists the rows")
p = run("plan", "--model", "llama3.1-405b", "--gpus", "8", "--all", "--top", "3", code=1)
check("No layout fits: the 2790 listed are all above 85% of memory." in p.stdout, f"no-fit --all table: {p.stdout!r}")
# Its header promised "Fitting, fastest first" above rows none of which fit.
check("None fits; by verdict, fastest first:" in p.stdout and "Fitting," not in p.stdout,
      f"no-fit --all header: {p.stdout!r}")
# Equivalence is a choice among layouts that fit: where none fits, none is equivalent. It
# marked the first 1498 of these 2790 oom rows "=" ("the first 1498 are equivalent to the
# fastest"), and the first 24 of 70 tight ones (70b on 8 GPUs of 195 GB), all of them
# reordered by model-parallel GPUs as if one were to be chosen.
check("eq: the first" not in p.stdout and not any(ln.rstrip().endswith("=") for ln in p.stdout.splitlines()),
      f"no-fit --all table marks no equivalent: {p.stdout!r}")
p = run("plan", "--model", "llama3.1-405b", "--gpus", "8", "--csv", "--all", "--top", "0", code=1)
check({c["equivalent_to_fastest"] for c in csv.DictReader(io.StringIO(p.stdout))} == {"false"},
      "no-fit --all csv marks no equivalent")
p = run("plan", "--model", "llama3.1-70b", "--gpus", "8", "--json", "--all", "--top", "0",
        "--device-set", "memory_bytes=195000000000", code=1)
tight = [r for r in json.loads(p.stdout) if r["verdict"] == "tight"]
check(len(tight) > 1 and not any(r["equivalent_to_fastest"] for r in json.loads(p.stdout)),
      "tight-only --all json marks no equivalent")
check([r["step_time_s"] for r in tight] == sorted(r["step_time_s"] for r in tight), "tight rows fastest first")
# Where some fit, --all marks the same fitting rows as the fitting-only list, and no other.
every = plan_json("--top", "0", "--all")
check({r["verdict"] for r in every} == {"fits", "tight", "oom"}, "the --all job has every verdict")
check([r["equivalent_to_fastest"] for r in every if r["verdict"] == "fits"] ==
      [r["equivalent_to_fastest"] for r in plan_json("--top", "0")] and
      not any(r["equivalent_to_fastest"] for r in every if r["verdict"] != "fits"), "--all marks the fitting rows only")
check("1 when none fits (with --all too" in " ".join(about.split()),
      "plan --help on the exit status")
run("plan", *JOB, "--all", "--top", "3")  # some fit: 0

for f in failures:
    print("FAIL:", f)
print(f"{'ok' if not failures else 'not ok'}: cli-plan ({len(failures)} failures)")
sys.exit(1 if failures else 0)
