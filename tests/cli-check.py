#!/usr/bin/env python3
# Exit statuses of `mem4d check`: 0 fits, 1 out of memory (or tight with
# --strict), 2 invalid input. Standard library only.
#
# usage: cli-check.py PATH/TO/mem4d PATH/TO/tests/data [PATH/TO/mem4d-admit]
# Also runs examples/preflight.sh (--dry-run) and, when given, the admission
# hook example, whose exit statuses follow the same verdicts.
# SPDX-License-Identifier: MIT
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

MEM4D, DATA = os.path.abspath(sys.argv[1]), sys.argv[2]
ADMIT = sys.argv[3] if len(sys.argv) > 3 else None
PREFLIGHT = os.path.join(DATA, "..", "..", "examples", "preflight.sh")
GIB = 1 << 30
failures = []


def args_file(name):
    with open(os.path.join(DATA, "megatron", name)) as f:
        return shlex.split(f.read().replace("\\\n", " "), comments=True)


def clean_env(**extra):
    """The caller's environment without any world-size source, plus extra."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("WORLD_SIZE", "SLURM_NTASKS", "SLURM_JOB_NUM_NODES",
                        "SLURM_GPUS_ON_NODE", "SLURM_NTASKS_PER_NODE")}
    env.update(extra)
    return env


def check(options, megatron, env=None):
    cmd = [MEM4D, "check"] + options + ["--"] + megatron
    p = subprocess.run(cmd, capture_output=True, text=True, env=env or clean_env(), timeout=60)
    return p.returncode, p.stdout, p.stderr


def expect(name, got, want, out="", err=""):
    if got != want:
        failures.append(f"{name}: exit {got}, expected {want}\n--- stdout\n{out}--- stderr\n{err}")
    print(f"{'ok' if got == want else 'FAIL'}: {name} (exit {got})")


def expect_in(name, needle, text):
    if needle not in text:
        failures.append(f"{name}: '{needle}' not in:\n{text}")
    print(f"{'ok' if needle in text else 'FAIL'}: {name}")


llama2 = args_file("llama2-7b-tp2-pp2.args")
llama3 = args_file("llama3-8b-tp1-cp2.args")

# Fits: exit 0, the world size from each source.
rc, out, err = check(["--world-size", "32"], llama2)
expect("fits with --world-size", rc, 0, out, err)
expect_in("fits prints the verdict", "check: fits", out)
expect_in("fits names the world source", "world size 32 (from --world-size)", out)
rc, out, err = check([], llama2, clean_env(WORLD_SIZE="32"))
expect("fits with WORLD_SIZE", rc, 0, out, err)
expect_in("WORLD_SIZE named", "(from WORLD_SIZE)", out)
rc, out, err = check([], llama2, clean_env(SLURM_JOB_NUM_NODES="4", SLURM_GPUS_ON_NODE="8"))
expect("fits with SLURM nodes x GPUs", rc, 0, out, err)
expect_in("SLURM named", "world size 32 (from SLURM_JOB_NUM_NODES", out)

# JSON: parseable, same exit status inside.
# The model from a preset or a config.json when the arguments lack the vocabulary.
# (A HuggingFaceTokenizer with no --tokenizer-model: only its files would know.)
no_vocab = [w for w in llama3 if w not in ("--vocab-size", "128256", "--tokenizer-model", "meta-llama/Meta-Llama-3-8B")]
rc, out, err = check(["--world-size", "16", "--hf-config", os.path.join(DATA, "hf", "llama3.1-8b.json")], no_vocab)
expect("model from --hf-config", rc in (0, 1), True, out, err)
expect_in("model from --hf-config estimates", "check: ", out)
rc, out, err = check(["--world-size", "16", "--vocab-size", "128256"], no_vocab)
expect("vocabulary from check --vocab-size", rc in (0, 1), True, out, err)
expect_in("check --vocab-size estimates", "check: ", out)
rc, out, err = check(["--world-size", "16", "--model", "nosuch"], no_vocab)
expect("unknown --model", rc, 2, out, err)

rc, out, err = check(["--world-size", "8", "--json"], llama3)
doc = json.loads(out)
expect("json exit_status is the exit status", doc["exit_status"], rc, out, err)
want = {"fits": 0, "tight": 0, "oom": 1}[doc["report"]["verdict"]]
expect("json verdict agrees", rc, want, out, err)
peak = doc["report"]["peak_bytes"]
expect("json world", doc["world_size"], 8, out, err)
expect("json has no proposal for a job that fits", doc["proposal"] if rc == 0 else None, None, out, err)

# Which attention the job runs: the stack's kernel where the arguments leave it
# to Transformer Engine, softmax attention for --attention-backend unfused, as
# the text and --json say.
expect("json attention kernel", (doc["report"]["attention_kernel"], doc["report"]["softmax_fallback"]),
       ("cudnn", False), out, err)
rc, out, err = check(["--world-size", "8", "--json"], llama3 + ["--attention-backend", "unfused"])
doc = json.loads(out)
expect("json softmax attention of --attention-backend unfused", doc["report"]["attention_kernel"], "unfused", out, err)
rc, out, err = check(["--world-size", "8"], llama3 + ["--transformer-impl", "local", "--use-flash-attn"])
expect_in("text names the flash kernel", "attention: fused (flash) attention, kernel", out)
# A sliding window (--window-size (left, 0): left + 1 keys; every 4th layer global)
rc, out, err = check(["--world-size", "8"], llama3 + ["--window-size", "1023,0", "--window-attn-skip-freq", "4"])
expect_in("text names the sliding window and its layers", "a sliding window of 1024 keys on 24 of 32 layers, "
          "timed as full attention", out)  # cp 2: the ring's chunks are not modelled
expect_in("cp > 1 times the window as full attention", "window_size with cp > 1", out)

# Out of memory: a GPU far smaller than the peak.
small = "%.3f" % (peak / 2 / GIB)
rc, out, err = check(["--world-size", "8", "--gpu-memory-gib", small], llama3)
expect("oom", rc, 1, out, err)
expect_in("oom prints the verdict", "check: oom", out)

# Out of memory as written, but another layout of the same 64 GPUs fits: check
# proposes it as Megatron flags, and those flags, appended to the job's
# (later flags win), pass the check.
llama70 = args_file("llama3-70b-tp4-mbs4.args")
rc, out, err = check(["--world-size", "64"], llama70)
expect("oom with a proposal", rc, 1, out, err)
proposal = [l for l in out.splitlines() if l.startswith("check: propose --")]
expect_in("proposal is Megatron flags", "check: propose --tensor-model-parallel-size", out)
if proposal:
    flags = proposal[0][len("check: propose "):proposal[0].rindex(" (peak ")].split()
    rc, out, err = check(["--world-size", "64"], llama70 + flags)
    expect("the proposal fits", rc, 0, out, err)
rc, out, err = check(["--world-size", "64", "--json"], llama70)
doc = json.loads(out)
expect("json proposal", doc["proposal"] is not None and doc["proposal"]["megatron_flags"].startswith(
    "--tensor-model-parallel-size"), True, out, err)
# full mode's verdict: fits within full_fit_threshold_ppm (85%) of memory
expect("json proposal fits", doc["proposal"]["peak_bytes"] <= 0.85 * doc["proposal"]["device_bytes"], True, out, err)
rc, out, err = check(["--world-size", "8", "--gpu-memory-gib", "1"], llama3)
expect_in("no proposal when nothing fits", "check: no layout of these 8 GPUs fits either", out)

# The job flags a proposal replaces: lib/megatron_args.h's table (the one
# list, beside the writer), read here as name -> words of value (0 a switch,
# 1 a value, None a list up to the next "--" word).
with open(os.path.join(DATA, "..", "..", "lib", "megatron_args.h")) as f:
    REPLACED = {m.group(1): {"SWITCH": 0, "VALUE": 1, "LIST": None}[m.group(2)]
                for m in re.finditer(r'\{"(--[a-z0-9-]+)", M4D_REPLACED_([A-Z]+)\}', f.read())}
expect("lib/megatron_args.h lists the replaced flags", len(REPLACED) > 40 and "--sequence-parallel" in REPLACED,
       True, f"{REPLACED}\n")


def replaced_words(job):
    """The job's words a proposal replaces, and the others (as cmd_check.c splits them)."""
    kept, dropped, i = [], [], 0
    while i < len(job):
        flag = job[i].split("=")[0]
        words = 0
        if flag in REPLACED:
            words = 1
            if "=" not in job[i] and REPLACED[flag] is None:
                while i + words < len(job) and not job[i + words].startswith("--"):
                    words += 1
            elif "=" not in job[i]:
                words += REPLACED[flag]
        if words:
            dropped += job[i:i + words]
            i += words
        else:
            kept.append(job[i])
            i += 1
    return kept, dropped


# A proposal that turns a switch off (issue: the line writes no flag for an
# off switch, so a job's --sequence-parallel or --recompute-activations
# outlived it when appended): Llama-2-7B at micro-batch 8 with selective
# recompute does not fit 8 GPUs of 80 GiB; the fastest layout that does is
# tensor 1 (no sequence parallelism) without recomputation. Check takes the
# job's switches out, names them in "replaces", and the job so applied is the
# proposal.
llama2_rc = [w if w != "1" or llama2[i - 1] != "--micro-batch-size" else "8" for i, w in enumerate(llama2)]
llama2_rc += ["--recompute-activations", "--overlap-grad-reduce"]
rc, out, err = check(["--world-size", "8", "--gpu-memory-gib", "80", "--json"], llama2_rc)
doc = json.loads(out)
expect("a proposal that turns switches off is printed", rc == 1 and doc["proposal"] is not None, True, out, err)
if doc["proposal"]:
    flags = doc["proposal"]["megatron_flags"].split()
    expect("it turns sequence parallelism and recomputation off",
           "--sequence-parallel" in flags or any(f.startswith("--recompute") for f in flags), False, out, err)
    replaces = doc["proposal"]["replaces"].split()
    for switch in ("--sequence-parallel", "--recompute-activations", "--overlap-grad-reduce",
                   "--use-distributed-optimizer"):
        expect(f"replaces names the job's {switch}", switch in replaces, True, out, err)
    kept, dropped = replaced_words(llama2_rc)
    expect("replaces is every job flag the line governs", replaces, dropped, out, err)
    expect("no replaced flag is left in the applied job", [w for w in kept if w.split("=")[0] in REPLACED], [],
           out, err)
    rc, out, err = check(["--world-size", "8", "--gpu-memory-gib", "80"], kept + flags)
    expect("the job with the proposal applied fits", rc, 0, out, err)

# A job's --distribute-saved-activations (full recompute's checkpoints split
# over tp) outlived a proposal without full recomputation, and the reader
# (as Megatron-LM) refuses it there: the proposal was withheld, "no layout
# fits". The line now governs it: Llama-2-7B at micro-batch 8 with full
# recompute on 8 x 24 GiB gets tp 4 without recomputation, the flag replaced.
llama2_dsa = [w if w != "1" or llama2[i - 1] != "--micro-batch-size" else "8" for i, w in enumerate(llama2)]
llama2_dsa += ["--recompute-granularity", "full", "--recompute-method", "uniform", "--recompute-num-layers", "1",
               "--distribute-saved-activations"]
rc, out, err = check(["--world-size", "8", "--gpu-memory-gib", "24", "--json"], llama2_dsa)
doc = json.loads(out)
expect("a proposal that turns full recomputation off despite --distribute-saved-activations is printed",
       rc == 1 and doc["proposal"] is not None and "does not hold" not in err, True, out, err)
if doc["proposal"]:
    expect("replaces names the job's --distribute-saved-activations",
           "--distribute-saved-activations" in doc["proposal"]["replaces"].split(), True, out, err)
    kept, dropped = replaced_words(llama2_dsa)
    rc, out, err = check(["--world-size", "8", "--gpu-memory-gib", "24"],
                         kept + shlex.split(doc["proposal"]["megatron_flags"]))
    expect("the job with that proposal applied fits", rc, 0, out, err)

# Every proposal for the recipes of tests/data/megatron (on their hardware,
# and on 70% to 25% of its memory so that most of them need one) is a command
# line `mem4d check` accepts and judges fits: the job's arguments without the
# flags the proposal replaces, named in "replaces" (argparse cannot take back
# a switch such as --account-for-embedding-in-pipeline-split or
# --sequence-parallel), then the proposal's flags (issue 24: a proposal that
# kept the job's --num-layers-per-virtual-pipeline-stage was refused by check
# itself).


def recipe_header(path):
    h = {}
    with open(path) as f:
        for line in f:
            for key in ("gpus", "gpu-memory-gib", "vocab", "env", "hf-config"):
                if line.startswith(f"# {key}: "):
                    h.setdefault(key, line[len(key) + 4:].split())
    return h


proposals = replaced = 0
for sub in ("recipes", "published", "open"):
    for name in sorted(os.listdir(os.path.join(DATA, "megatron", sub))):
        if not name.endswith(".args"):
            continue
        path = os.path.join(DATA, "megatron", sub, name)
        h = recipe_header(path)
        job = args_file(os.path.join(sub, name))
        env = clean_env(**dict([h["env"][0].split("=", 1)] if "env" in h else []))
        opts = ["--world-size", h["gpus"][0], "--json"] + (["--gpu", h["gpus"][1]] if len(h["gpus"]) > 1 else [])
        opts += ["--vocab-size", h["vocab"][0]] if "vocab" in h else []
        opts += ["--hf-config", os.path.join(DATA, "hf", h["hf-config"][0])] if "hf-config" in h else []
        rc, out, err = check(opts + (["--gpu-memory-gib", h["gpu-memory-gib"][0]] if "gpu-memory-gib" in h else []),
                             job, env)
        if rc == 2:  # a recipe test-import lists as not judged yet: its vocabulary unknown, layers
            # its flags do not carry (slime's Qwen3.5 spec builds them from the Hugging Face config), or a
            # layout Megatron-LM refuses as written (Megatron-LM's gpt-oss example: 12 layers on 8 stages)
            expect(f"{name} is refused for its vocabulary, its --spec or its written layout only",
                   "vocabulary" in err or "builds Gated DeltaNet layers" in err or "are not divisible by pp" in err,
                   True, out, err)
            continue
        memory = json.loads(out)["report"]["device_bytes"] / GIB
        for scale in (1.0, 0.7, 0.5, 0.35, 0.25):
            sized = opts + ["--gpu-memory-gib", "%.3f" % (memory * scale)]
            rc, out, err = check(sized, job, env)
            doc = json.loads(out)
            expect(f"{name} at {scale:.0%} of memory: no proposal that does not hold", "does not hold" in err,
                   False, out, err)
            if not doc["proposal"]:
                continue
            kept, dropped = replaced_words(job)
            expect(f"{name} at {scale:.0%}: replaces names the job's flags the line governs",
                   doc["proposal"]["replaces"].split(), dropped, out, err)
            applied = kept + shlex.split(doc["proposal"]["megatron_flags"])
            rc, out, err = check(sized, applied, env)
            proposals += 1
            replaced += bool(dropped)
            expect(f"{name} at {scale:.0%}: the job with the proposal applied fits", rc, 0, out, err)
expect("the recipes give many proposals, each replacing job flags", proposals > 50 and replaced == proposals, True,
       f"{proposals} proposals, {replaced} replacing job flags\n")

# Tight: peak at about 90% of memory; exit 0, or 1 with --strict.
tight = "%.3f" % (peak / 0.9 / GIB)
rc, out, err = check(["--world-size", "8", "--gpu-memory-gib", tight], llama3)
expect("tight without --strict", rc, 0, out, err)
expect_in("tight verdict", "check: tight", out)
rc, out, err = check(["--world-size", "8", "--gpu-memory-gib", tight, "--strict"], llama3)
expect("tight with --strict", rc, 1, out, err)

# Warnings go to stderr, the report to stdout.
rc, out, err = check(["--world-size", "16"], args_file("llama3-8b-unknown-flags.args"))
expect("unknown flags still check", rc, 0, out, err)
expect_in("warning on stderr", "mem4d: warning: --frobnicate-the-gradients", err)
if "warning" in out:
    failures.append("warnings leaked to stdout")

# The config.json importer's warnings reach stderr too.
with tempfile.TemporaryDirectory() as tmp:
    with open(os.path.join(DATA, "hf", "llama3.1-8b.json")) as f:
        doc = json.load(f)
    del doc["model_type"]
    config = os.path.join(tmp, "config.json")
    with open(config, "w") as f:
        json.dump(doc, f)
    rc, out, err = check(["--world-size", "16", "--hf-config", config], no_vocab)
    expect("hf-config with a warning still checks", rc in (0, 1), True, out, err)
    expect_in("hf-config warning on stderr", 'mem4d: warning: config.json has no "model_type"', err)
    # A FIFO with no writer is refused before anything reads it.
    fifo = os.path.join(tmp, "fifo.json")
    os.mkfifo(fifo)
    rc, out, err = check(["--world-size", "16", "--hf-config", fifo], no_vocab)
    expect("hf-config FIFO", rc, 2, out, err)
    expect_in("hf-config FIFO says why", "is not a regular file", err)

# Invalid input: exit 2, with the reason on stderr.
invalid = [
    ("missing value", ["--world-size", "8"], args_file("missing-value.args"), "--num-layers needs a value"),
    ("non-numeric", ["--world-size", "8"], args_file("non-numeric.args"), "'4k'"),
    ("contradictory", ["--world-size", "8"], args_file("contradictory.args"), "--bf16 and --fp16"),
    ("no world size", [], llama2, "world size is unknown"),
    ("world not divisible", ["--world-size", "6"], llama2, "not divisible"),
    ("unknown gpu", ["--gpu", "z80", "--world-size", "32"], llama2, "unknown gpu"),
    ("unknown option", ["--frobnicate"], llama2, "unknown option"),
    ("bad world size", ["--world-size", "eight"], llama2, "--world-size"),
    ("hex world size", ["--world-size", "0x20"], llama2, "--world-size needs a non-negative decimal integer"),
    ("zero world size", ["--world-size", "0"], llama2, "--world-size must be at least 1"),
    ("world size without value", ["--world-size", "--"], llama2, "--world-size needs a value"),
    ("model and hf-config", ["--world-size", "8", "--model", "llama3.1-8b", "--hf-config",
                             os.path.join(DATA, "hf", "llama3.1-8b.json")], llama2, "contradict each other"),
    ("tiny gpu memory", ["--world-size", "32", "--gpu-memory-gib", "0.0000001"], llama2, "--gpu-memory-gib"),
    ("no megatron arguments", ["--world-size", "8"], [], "no Megatron-LM arguments"),
    ("bad WORLD_SIZE", [], llama2, "WORLD_SIZE"),
    ("no vocabulary size", ["--world-size", "8"],
     no_vocab, "vocabulary size is unknown"),
]
for name, opts, megatron, needle in invalid:
    env = clean_env(WORLD_SIZE="lots") if name == "bad WORLD_SIZE" else None
    rc, out, err = check(opts, megatron, env)
    expect(name, rc, 2, out, err)
    expect_in(name + " says why", needle, err)

p = subprocess.run([MEM4D, "check", "--help"], capture_output=True, text=True, timeout=60)
expect("--help", p.returncode, 0, p.stdout, p.stderr)

# preflight.sh: launches (here: prints) only when the check passes; the
# world size comes from torchrun's --nproc-per-node x --nnodes.
def preflight(opts, megatron):
    cmd = ["bash", PREFLIGHT, "--dry-run"] + opts + ["--", "torchrun", "--nproc-per-node", "8",
                                                     "--nnodes=4", "pretrain_gpt.py"] + megatron
    p = subprocess.run(cmd, capture_output=True, text=True, env=clean_env(MEM4D=MEM4D), timeout=60)
    return p.returncode, p.stdout, p.stderr


rc, out, err = preflight([], llama2)
expect("preflight launches a job that fits", rc, 0, out, err)
expect_in("preflight world size from torchrun", "world size 32 (from --world-size)", out)
expect_in("preflight prints the launch", "would run: torchrun", out)
rc, out, err = preflight(["--gpu-memory-gib", "4"], llama2)
expect("preflight refuses an oom job", rc, 1, out, err)
expect_in("preflight says why", "not launching", err)
rc, out, err = preflight([], args_file("non-numeric.args"))
expect("preflight refuses invalid arguments", rc, 2, out, err)
if "would run" in out:
    failures.append("preflight launched a refused job")

# The admission hook: admit (0), reject (1), propose (3).
if ADMIT:
    def admit(args_name, gpus, *extra):
        cmd = [ADMIT, "--args", os.path.join(DATA, "megatron", args_name), "--gpu", "h100-80",
               "--gpus", str(gpus)] + list(extra)
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        return p.returncode, p.stdout, p.stderr

    rc, out, err = admit("llama2-7b-tp2-pp2.args", 32)
    expect("admit a job that fits", rc, 0, out, err)
    rc, out, err = admit("llama2-7b-tp2-pp2.args", 32, "--gpu-memory-gib")
    expect("admit usage error", rc, 2, out, err)
    with tempfile.TemporaryDirectory() as tmp:  # a FIFO with no writer would block the hook
        fifo = os.path.join(tmp, "job.args")
        os.mkfifo(fifo)
        p = subprocess.run([ADMIT, "--args", fifo, "--gpu", "h100-80", "--gpus", "8"], capture_output=True,
                           text=True, timeout=60)
        expect("admit refuses a FIFO as the argument file", p.returncode, 2, p.stdout, p.stderr)
        expect_in("admit says why", "is not a regular file", p.stderr)
        p = subprocess.run([ADMIT, "--args", os.path.join(DATA, "megatron", "llama2-7b-tp2-pp2.args"), "--gpu",
                            "h100-80", "--gpus", "8", "--hf-config", fifo], capture_output=True, text=True, timeout=60)
        expect("admit refuses a FIFO as the config", p.returncode, 2, p.stdout, p.stderr)
    rc, out, err = admit("non-numeric.args", 8)
    expect("reject invalid arguments", rc, 1, out, err)
    expect_in("reject names the flag", "--hidden-size", out)
    rc, out, err = admit("llama3-70b-tp8-pp4-vpp.args", 64, "--json")
    doc = json.loads(out)
    expect("admit json decision", doc["decision"], "admit", out, err)
    # Out of memory as written; another layout of the same GPUs fits.
    rc, out, err = admit("llama3-70b-tp4-mbs4.args", 64)
    expect("propose another layout", rc, 3, out, err)
    expect_in("proposal is Megatron flags", "propose: --tensor-model-parallel-size", out)

if failures:
    print("\n\n".join(failures), file=sys.stderr)
    sys.exit(1)
