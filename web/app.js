// SPDX-License-Identifier: MIT
// The page over libmem4d's WebAssembly build. It asks the library for every
// number it shows (and for the lists it offers: presets, layout and device
// settings, report terms, metrics); it only formats them (bytes as GiB) and
// sorts or picks rows. No network request beyond its own files.

import { load } from "./mem4d/mem4d.js";

const $ = (id) => document.getElementById(id);
const GIB = 2 ** 30;
// Friendlier labels for some keys; any other key the library reports is shown by its name.
const LABELS = {
    world: "GPUs", seq: "Sequence length", gbs: "Global batch (0: unknown)", tp: "Tensor parallel (tp)",
    cp: "Context parallel (cp)", pp: "Pipeline parallel (pp)", dp: "Data parallel (dp; 0: from GPUs)",
    mbs: "Micro-batch (mbs)", vpp: "Virtual stages (vpp)", recompute: "Recompute", dist_opt: "Distributed optimizer",
    mode: "Mode", memory_bytes: "memory_bytes (bytes)", ep: "Expert parallel (ep)",
    etp: "Expert tensor parallel (etp; 0: tp)", moe_dispatcher: "MoE token dispatcher",
};
const SCALE_KEYS = ["world", "seq", "gbs"];
// The stacked parts of a stage (the library's term names); terms whose name
// ends in _bytes are sizes, shown in GiB, the others are counts.
const BAR_TERMS = ["weights_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes", "overhead_bytes"];
const isBytes = (term) => term.endsWith("_bytes");
const termLabel = (term) => term.replace(/_bytes$/, "").replace(/_/g, " ");
const PLAN_ROWS = 500;
// How a field of each kind (mem4d_param_kind_name) reads in a larger unit: [divisor, unit].
const UNITS = { bytes: [GIB, "GiB"], flops: [1e12, "TFLOP/s"], bytes_per_s: [1e9, "GB/s"], ppm: [1e4, "%"],
                nanoseconds: [1e3, "µs"] };

let m4;
let hfModel = null;            // a Model read from a dropped config.json
let lastEstimate = null;       // {model, layout} behind the estimate view (owned)
let planRows = [];
let chosen = null;             // a plan row
const sortState = { key: "rank", dir: 1 };

const gib = (bytes) => (Number(bytes) / GIB).toFixed(2);
// Text from a file or the library (a GPU or model name, a message quoting a
// path or a flag) as the CLI shows it: control characters (C0, DEL, C1),
// bidirectional and line separators, and the U+FFFD that stands for bytes
// that were not UTF-8, as \xNN / \uNNNN text (issue 24).
const shown = (text) => String(text).replace(/[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufffd]/g,
    (c) => c.charCodeAt(0) < 0x100 ? `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`
        : `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
const setText = (id, text) => { $(id).textContent = shown(text); };
const status = (text) => setText("status", text);
const gpuName = (device) => `${device.name || "GPU"}${device.described ? " (described)" : ""}`;

function fail(where, e) {
    const message = e && e.name === "Mem4dError" ? e.message : String(e && e.message ? e.message : e);
    setText(where, message);
    status(`Error: ${message}`);
}

function clearErrors() {
    for (const id of ["job-error", "model-error", "check-error"]) setText(id, "");
}

// --- the form, built from the library's own lists ------------------------------

function option(value, text, selected) {
    const o = document.createElement("option");
    o.value = value;
    o.textContent = shown(text);
    o.selected = !!selected;
    return o;
}

/** An input for one parameter of kind ("layout" or "device"), valued as text. */
function field(cls, key, value, idPrefix) {
    const id = `${idPrefix}-${key}`;
    const wrap = document.createElement("div");
    wrap.className = "field";
    const label = document.createElement("label");
    label.htmlFor = id;
    label.textContent = LABELS[key] || key;
    wrap.append(label);
    const [lo, hi] = cls.bounds(key);
    // The library says what a value means where it can (newer ones name
    // every kind); an older one is read from its bounds and value names.
    let kind = cls.kind(key);
    const names = [];
    if ((kind === "choice" || (kind === null && hi - lo < 16n)) && hi - lo < 64n)
        for (let v = lo; v <= hi; v++) names.push(cls.valueName(key, v));
    if (kind === null) kind = names.length && names.every((n) => n) ? "choice" : lo === 0n && hi === 1n ? "boolean" : "";
    let input;
    if (kind === "choice" && names.every((n) => n)) {
        input = document.createElement("select");
        names.forEach((n, i) => input.append(option(n, n, BigInt(i) + lo === value)));
    } else if (kind === "boolean") {
        input = document.createElement("select");
        input.append(option("1", "yes", value === 1n), option("0", "no", value === 0n));
    } else {
        input = document.createElement("input");
        input.inputMode = "numeric";
        input.value = input.defaultValue = String(value);
        input.size = 12;
        input.title = `${key}: ${lo} to ${hi}${kind ? ` (${kind.replace(/_/g, " ")})` : ""}`;
        const unit = UNITS[kind];
        if (unit) {
            // A value is entered as the library takes it (bytes, FLOP/s, ppm); the hint reads it in a larger unit.
            const hint = cell("span", "", { class: "hint", "aria-live": "off" });
            const show = () => {
                const text = input.value.trim();
                hint.textContent = /^\d+$/.test(text) ? `= ${(Number(text) / unit[0]).toFixed(2)} ${unit[1]}` : "";
            };
            input.addEventListener("input", show);
            queueMicrotask(show);
            wrap.append(input, hint);
        }
    }
    input.id = id;
    input.name = key;
    input.dataset.key = key;
    if (!input.parentNode) wrap.append(input);
    return wrap;
}

function buildForm() {
    const models = m4.Model.presets();
    $("model").replaceChildren(...models.map((n) => option(n, n, n === "llama3.1-70b")));
    const gpus = m4.Device.presets();
    $("gpu").replaceChildren(...gpus.map((n) => option(n, n, n === "h100-80")));

    const defaults = new m4.Layout();
    const values = defaults.toObject();
    defaults.free();
    const start = { world: 64n, seq: 8192n, gbs: 512n };  // the CLI's default plan job
    const searched = new Set(m4.SEARCHED);
    const scale = [], layout = [], other = [];
    for (const key of m4.Layout.keys()) {
        const f = field(m4.Layout, key, start[key] ?? values[key], "layout");
        if (SCALE_KEYS.includes(key)) scale.push(f);
        else if (searched.has(key) || key === "mode") layout.push(f);
        else other.push(f);
    }
    $("scale-fields").replaceChildren(...scale);
    $("layout-fields").replaceChildren(...layout);
    $("other-fields").replaceChildren(...other);
    fillDevice();
}

/** The device fields show the chosen preset's values; edits describe another GPU. */
function fillDevice() {
    const d = m4.Device.preset($("gpu").value);
    const values = d.toObject();
    d.free();
    $("device-fields").replaceChildren(...m4.Device.keys().map((k) => field(m4.Device, k, values[k], "device")));
}

function inputs(containerIds) {
    return containerIds.flatMap((id) => [...$(id).querySelectorAll("[data-key]")]);
}

/** A Layout from the form: every field, parsed by the library (set_str). */
function formLayout(keys = null) {
    const layout = new m4.Layout();
    try {
        for (const input of inputs(["scale-fields", "layout-fields", "other-fields"])) {
            const key = input.dataset.key;
            if (keys && !keys.has(key)) continue;
            const text = input.value.trim();
            if (text !== "") layout.setOne(key, text);
        }
        return layout;
    } catch (e) {
        layout.free();
        throw e;
    }
}

function formDevice() {
    const device = m4.Device.preset($("gpu").value);
    try {
        // Only the settings the user changed: the rest stay the preset's.
        for (const input of inputs(["device-fields"])) {
            const text = input.value.trim();
            if (text !== "" && text !== input.defaultValue) {
                device.setOne(input.dataset.key, text);
                device.described = true;
            }
        }
        return device;
    } catch (e) {
        device.free();
        throw e;
    }
}

function formModel() {
    if ($("model").value === "config.json" && hfModel) return hfModel.copy();
    return m4.Model.preset($("model").value);
}

function field_value(key) {
    return $(`layout-${key}`).value.trim();
}

// --- config.json ------------------------------------------------------------------

async function readConfig(file) {
    clearErrors();
    const text = await file.text();
    try {
        const model = m4.Model.fromHfConfig(text);
        if (hfModel) hfModel.free();
        hfModel = model;
        const select = $("model");
        select.querySelector('option[value="config.json"]')?.remove();
        select.prepend(option("config.json", `config.json: ${file.name} (${model.name || "unnamed"})`, true));
        select.value = "config.json";
        const warn = model.warnings.length ? ` Warnings: ${model.warnings.join("; ")}` : "";
        setText("model-note", `Read ${file.name}: ${model.numParams.toLocaleString("en-US")} parameters.${warn}`);
        status(`Model read from ${file.name}.`);
    } catch (e) {
        setText("model-note", "");
        // As the CLI says it: the file, then the library's sentence.
        fail("model-error", { message: `${file.name}: ${e.message}` });
    }
}

// --- a torchtitan job TOML ----------------------------------------------------------

/** Show a layout's value in the form's field for key (a choice by its name). */
function setField(key, value) {
    const input = $(`layout-${key}`);
    if (!input) return;
    const name = input.tagName === "SELECT" ? m4.Layout.valueName(key, value) : null;
    input.value = name ?? (input.tagName === "SELECT" ? String(Number(value)) : String(value));
    input.dispatchEvent(new Event("input"));
}

async function readTorchtitan(file) {
    clearErrors();
    setText("layout-note", "");
    const text = await file.text();
    withJob((model) => {
        const world = BigInt(field_value("world") || "0");
        let layout;
        try {
            layout = m4.Layout.fromTorchtitanToml(text, world, model);
        } catch (e) {
            throw { name: e.name, message: `${file.name}: ${e.message}` };  // as the CLI says it: the file first
        }
        try {
            const values = layout.toObject();
            for (const [key, value] of Object.entries(values)) if (key !== "world") setField(key, value);
            // the form has no field for the layer table: torchtitan's split is not kept
            const split = Number(values.pp) > 1 ? " The form splits the layers evenly, not as torchtitan does." : "";
            const warn = layout.warnings.length ? ` Warnings: ${layout.warnings.join("; ")}` : "";
            setText("layout-note", `Read ${file.name}.${split}${warn}`);
            status(`Layout read from ${file.name}.`);
        } finally {
            layout.free();
        }
    });
}

function setupDrop() {
    $("torchtitan-file").addEventListener("change", (ev) => {
        if (ev.target.files[0]) readTorchtitan(ev.target.files[0]);
    });
    const zone = $("drop");
    $("config-file").addEventListener("change", (ev) => {
        if (ev.target.files[0]) readConfig(ev.target.files[0]);
    });
    // A file dropped anywhere on the page is read as config.json (and the
    // browser does not navigate away to show it).
    for (const type of ["dragenter", "dragover"])
        document.addEventListener(type, (ev) => { ev.preventDefault(); zone.classList.add("over"); });
    document.addEventListener("dragleave", (ev) => { if (!ev.relatedTarget) zone.classList.remove("over"); });
    document.addEventListener("drop", (ev) => {
        ev.preventDefault();
        zone.classList.remove("over");
        const file = ev.dataTransfer && ev.dataTransfer.files[0];
        if (file) readConfig(file);
    });
}

// --- the estimate view ----------------------------------------------------------

function cell(tag, text, attrs = {}) {
    const c = document.createElement(tag);
    c.textContent = shown(text);
    for (const [k, v] of Object.entries(attrs)) c.setAttribute(k, v);
    return c;
}

function formatMetric(name, v) {
    if (v === null || v === undefined) return "-";
    if (name.startsWith("tokens_per_s")) return Math.round(v).toLocaleString("en-US");
    if (name === "mfu_peak_flops") return `${(v / 1e12).toFixed(0)} TFLOP/s`;
    if (name.endsWith("_s")) return v.toFixed(3);
    if (name === "tflops_per_gpu") return v.toFixed(1);
    return v.toFixed(3);
}

function showEstimate(model, layout, device, title) {
    const r = m4.estimate(model, layout, device);
    if (lastEstimate) { lastEstimate.model.free(); lastEstimate.layout.free(); }
    lastEstimate = { model: model.copy(), layout: layout.copy() };
    const section = $("estimate");
    section.hidden = false;
    section.dataset.verdict = r.verdict;
    section.dataset.peakBytes = String(r.peak_bytes);
    section.dataset.deviceBytes = String(r.device_bytes);
    const v = $("verdict");
    v.className = `verdict ${r.verdict}`;
    v.textContent = shown(`${title}`) + `: peak ${gib(r.peak_bytes)} GiB of ${gib(r.device_bytes)} GiB on stage ` +
        `${r.peak_stage} (${r.mode} mode) — ${r.verdict}`;

    // Stacked bars against the device's memory.
    let scale = r.device_bytes;
    for (const s of r.stages) if (s.total_bytes > scale) scale = s.total_bytes;
    const bars = $("bars");
    bars.setAttribute("aria-label", `Stacked bars of ${r.stages.length} pipeline stages against ` +
        `${gib(r.device_bytes)} GiB of device memory; the table below has the numbers.`);
    const pct = (b) => `${(Number(b) / Number(scale)) * 100}%`;
    bars.replaceChildren(...r.stages.map((s) => {
        const row = document.createElement("div");
        row.className = "bar-row";
        row.append(cell("span", `stage ${s.stage}`, { class: "bar-label" }));
        const track = document.createElement("div");
        track.className = "bar-track";
        for (const term of BAR_TERMS) {
            const seg = cell("span", "", { class: `seg ${term}`, title: `${termLabel(term)}: ${gib(s[term])} GiB` });
            seg.style.width = pct(s[term]);
            track.append(seg);
        }
        const line = cell("span", "", { class: "device-line", title: `device: ${gib(r.device_bytes)} GiB` });
        line.style.left = pct(r.device_bytes);
        track.append(line);
        row.append(track, cell("span", `${gib(s.total_bytes)} GiB`, { class: "bar-total" }));
        return row;
    }));
    document.querySelector("#estimate .legend").replaceChildren(
        ...BAR_TERMS.map((t) => cell("span", termLabel(t), { class: `key ${t}` })),
        cell("span", `device memory ${gib(r.device_bytes)} GiB`, { class: "key device" }));

    // The table: every term the library reports.
    const thead = $("stages").querySelector("thead");
    const head = document.createElement("tr");
    head.append(cell("th", "stage", { scope: "col" }), ...m4.TERMS.map((t) => cell("th", termLabel(t), { scope: "col", title: t })));
    thead.replaceChildren(head);
    $("stages").querySelector("tbody").replaceChildren(...r.stages.map((s) => {
        const tr = document.createElement("tr");
        if (s.stage === r.peak_stage) tr.className = "peak";
        tr.append(cell("th", String(s.stage), { scope: "row" }));
        for (const t of m4.TERMS) {
            const text = isBytes(t) ? gib(s[t]) : s[t].toLocaleString("en-US");
            tr.append(cell("td", text, { "data-term": t, "data-value": String(s[t]), title: `${s[t]}` }));
        }
        return tr;
    }));

    // Step time and its breakdown, and what the estimate derived.
    const dl = document.createElement("dl");
    const add = (k, val, attrs) => {
        const pair = document.createElement("div");
        pair.append(cell("dt", k.replace(/_/g, " ")), cell("dd", val, attrs));
        dl.append(pair);
    };
    // A speed figure with its band (where 90% of measured runs fell around the
    // prediction; doc/perf.md, "Uncertainty"): "152,038 (90,878–174,958)".
    const band = (k) => {
        const lo = r.metrics[k === "step_time_s" ? "step_time_low_s" : `${k}_low`];
        const hi = r.metrics[k === "step_time_s" ? "step_time_high_s" : `${k}_high`];
        return lo === undefined || hi === undefined ? "" : ` (${formatMetric(k, lo)}–${formatMetric(k, hi)})`;
    };
    if (r.metrics)
        for (const [k, val] of Object.entries(r.metrics))
            add(k, formatMetric(k, val) + band(k), { "data-metric": k, "data-value": String(val) });
    else add("speed", "not predicted (needs a global batch and a GPU with a peak)");
    // The attention kernel by name ("cudnn"; "unfused": softmax attention) and whether
    // PyTorch's fp32 softmax ran in place of the stack's fused one.
    const infoText = (k, val) => k === "attention_kernel" ? r.attention_kernel_name
        : k === "softmax_fallback" ? (val ? "yes: PyTorch's fp32 softmax" : "no") : val.toLocaleString("en-US");
    for (const [k, val] of Object.entries(r.info))
        add(k, infoText(k, val), { "data-info": k, "data-value": String(val) });
    $("metrics").replaceChildren(cell("h3", "Step time and what the estimate derived"), dl);
    showFlags(lastEstimate.model, lastEstimate.layout, "estimate-flags", "estimate-flags-btn");
    return r;
}

function showFlags(model, layout, textareaId, buttonId) {
    const area = $(textareaId);
    const button = $(buttonId);
    try {
        area.value = layout.megatronArgs(model);
        button.disabled = false;
    } catch (e) {
        area.value = e.message;
        button.disabled = true;
    }
}

async function copyFrom(textareaId) {
    const area = $(textareaId);
    try {
        await navigator.clipboard.writeText(area.value);
        status("Megatron flags copied.");
    } catch {
        area.select();
        const ok = document.execCommand && document.execCommand("copy");
        status(ok ? "Megatron flags copied." : "The flags are selected: copy them with Ctrl+C.");
    }
}

/** Run fn(model, device) with the form's model and GPU (freed afterwards); errors go under the form. */
function withJob(fn) {
    clearErrors();
    let model, device;
    try {
        model = formModel();
        device = formDevice();
        fn(model, device);
    } catch (e) {
        fail("job-error", e);
    } finally {
        model?.free(); device?.free();
    }
}

function runEstimate() {
    withJob((model, device) => {
        const layout = formLayout();
        try {
            showEstimate(model, layout, device, `${model.name || "model"} on ${gpuName(device)}`);
        } finally {
            layout.free();
        }
        status(`Estimated: ${$("verdict").textContent}`);
        $("estimate").scrollIntoView({ block: "start" });
    });
}

// --- the plan -------------------------------------------------------------------

const PLAN_COLUMNS = () => [
    ["rank", "#"], ["tp", "tp"], ["cp", "cp"], ["pp", "pp"], ["dp", "dp"], ["mbs", "mbs"], ["vpp", "vpp"],
    ["recompute", "recompute"], ["ep", "ep"], ["etp", "etp"], ["moe_dispatcher", "dispatcher"],
    ["dist_opt", "dist opt"], ["equivalent_to_fastest", "≈ fastest"], ["attention_kernel", "attention"],
    ["softmax_fallback", "torch softmax"], ["peak_bytes", "peak GiB"],
    ["peak_allocated_bytes", "allocated GiB"], ["peak_reserved_bytes", "reserved GiB"], ["verdict", "verdict"],
    ...m4.METRICS.map((m) => [m, m.replace(/_/g, " ")]), ["mfu_peak", "MFU of"],
];

/** The precision whose peak MFU is of, as mem4d plan --json's mfu_peak: "fp8" when the
 *  report's peak is the device's fp8 peak, else "bf16"; null without a speed prediction. */
function mfuPeakName(flops, device) {
    if (flops === null || flops === undefined) return null;
    const fp8 = device.get("peak_fp8_flops");
    return fp8 !== 0n && flops > 0 && BigInt(Math.round(flops)) === fp8 ? "fp8" : "bf16";
}

const FIRST = "decoder_first_pipeline_num_layers", LAST = "decoder_last_pipeline_num_layers";

function planRow(search, rank, device) {
    const l = search.layout, r = search.report;
    const row = { rank, layout: l.copy(), peak_bytes: r.peak_bytes, peak_allocated_bytes: r.peak_allocated_bytes,
                  peak_reserved_bytes: r.peak_reserved_bytes, verdict: r.verdict };
    for (const k of ["tp", "cp", "pp", "dp", "mbs", "vpp", "ep", "etp", "dist_opt", FIRST, LAST]) row[k] = l.get(k);
    row.recompute = l.valueName("recompute");
    row.etp = row.etp || row.tp;  // 0: the experts take tp, as mem4d plan prints it
    row.moe_dispatcher = l.valueName("moe_dispatcher");
    for (const m of m4.METRICS) row[m] = r.metric(m);
    // Which attention runs (mem4d plan --json's attention_kernel and softmax_fallback).
    row.attention_kernel = m4.Device.valueName("attention_kernel", r.info("attention_kernel"));
    row.softmax_fallback = Number(r.info("softmax_fallback"));
    row.mfu_peak = mfuPeakName(row.mfu_peak_flops, device);
    // As mem4d plan: those whose band overlaps the fastest's lead (doc/perf.md, "Uncertainty").
    row.equivalent_to_fastest = search.equivalent_to_fastest ? 1 : 0;
    return row;
}

function renderPlan() {
    const cols = PLAN_COLUMNS();
    const head = document.createElement("tr");
    for (const [key, label] of cols) {
        const th = cell("th", "", { scope: "col" });
        const b = cell("button", label, { type: "button", "data-sort": key });
        if (sortState.key === key) th.setAttribute("aria-sort", sortState.dir > 0 ? "ascending" : "descending");
        b.addEventListener("click", () => {
            sortState.dir = sortState.key === key ? -sortState.dir : 1;
            sortState.key = key;
            renderPlan();
            document.querySelector(`#plan-table button[data-sort="${key}"]`).focus();
        });
        th.append(b);
        head.append(th);
    }
    head.prepend(cell("th", "layout", { scope: "col" }));
    $("plan-table").querySelector("thead").replaceChildren(head);
    const rows = [...planRows].sort((a, b) => {
        const x = a[sortState.key], y = b[sortState.key];
        if (x === y) return a.rank - b.rank;
        if (x === null) return 1;
        if (y === null) return -1;
        return (x < y ? -1 : 1) * sortState.dir;
    });
    $("plan-table").querySelector("tbody").replaceChildren(...rows.map((row) => {
        const tr = document.createElement("tr");
        tr.dataset.rank = row.rank;
        tr.dataset.first_stage_layers = row[FIRST];
        tr.dataset.last_stage_layers = row[LAST];
        if (chosen === row) tr.className = "chosen";
        for (const [key] of cols) {
            const v = row[key];
            let text;
            if (key.startsWith("peak_")) text = gib(v);
            else if (key === "dist_opt") text = v ? "yes" : "no";
            else if (key === "equivalent_to_fastest") text = v ? "=" : "";
            else if (key === "softmax_fallback") text = v ? "yes" : "";
            else if (key === "pp" && (row[FIRST] || row[LAST])) text = `${v} (${row[FIRST]}/${row[LAST]})`;
            else if (m4.METRICS.includes(key)) text = formatMetric(key, v);
            else text = String(v);
            const c = cell(key === "rank" ? "th" : "td", text, { "data-col": key, "data-value": String(v) });
            if (key === "rank") c.setAttribute("scope", "row");
            if (key === "verdict") c.className = `verdict ${v}`;
            tr.append(c);
        }
        // "Use" comes first, so that reaching it never scrolls the ranks out of view.
        const use = cell("button", "Use", { type: "button", "aria-label": `Use layout ${row.rank}` });
        use.addEventListener("click", () => choose(row));
        const td = document.createElement("td");
        td.append(use);
        tr.prepend(td);
        return tr;
    }));
}

function choose(row) {
    chosen = row;
    withJob((model, device) => {
        showFlags(model, row.layout, "plan-flags", "plan-flags-btn");
        setText("chosen", `Layout ${row.rank}: tp ${row.tp}, cp ${row.cp}, pp ${row.pp}, dp ${row.dp}, ` +
            `mbs ${row.mbs}, vpp ${row.vpp}, recompute ${row.recompute}. Its memory is shown above.`);
        showEstimate(model, row.layout, device, `Layout ${row.rank}: ${model.name || "model"} on ${gpuName(device)}`);
        renderPlan();
    });
}

function runPlan() {
    withJob((model, device) => {
        // The searched knobs are left free; every other setting of the form is fixed.
        const fixed = new Set(m4.Layout.keys().filter((k) => !m4.SEARCHED.includes(k)));
        const base = formLayout(fixed);
        try {
            const t0 = performance.now();
            const search = m4.plan(model, device, { gpus: base.get("world"), seq: base.get("seq"),
                                                    gbs: base.get("gbs"), base, tie_break: 1,
                                                    fits_only: $("plan-all").checked ? 0 : 1 });
            const rows = [];
            let valid;
            try {
                while (rows.length < PLAN_ROWS && search.step()) rows.push(planRow(search, rows.length + 1, device));
                let more = 0;
                while (search.step()) more++;
                valid = { ...search.stats, more };
            } finally {
                search.free();
            }
            const ms = performance.now() - t0;
            planRows.forEach((row) => row.layout.free());
            planRows = rows;
            chosen = null;
            sortState.key = "rank";
            sortState.dir = 1;
            $("plan").hidden = false;
            $("estimate").hidden = true;  // another job's estimate would mislead; "Use" shows this one's
            $("plan").dataset.ms = ms.toFixed(2);
            const total = rows.length + valid.more;
            setText("plan-summary", `${valid.valid} valid layouts estimated, ${valid.pruned} pruned unseen, in ` +
                `${ms.toFixed(1)} ms; ${total} ${$("plan-all").checked ? "listed" : "fit"}` +
                (valid.more ? ` (the first ${rows.length} are shown)` : "") + ".");
            setText("chosen", "Choose a layout with its \"Use\" button.");
            $("plan-flags").value = "";
            $("plan-flags-btn").disabled = true;
            renderPlan();
            $("plan").scrollIntoView({ block: "start" });
            status(rows.length ? `Plan ready: ${total} layouts, fastest first.` :
                "No layout fits. Try more GPUs, a shorter sequence, or include layouts that do not fit.");
            landscape(model, device, base);
        } finally {
            base.free();
        }
    });
}

// --- the landscape: every valid layout, the best per (cp, mbs, tp, pp) cell ----------

const VERDICT_ORDER = { fits: 0, tight: 1, oom: 2 };

function landscape(model, device, base) {
    const search = m4.plan(model, device, { gpus: base.get("world"), seq: base.get("seq"), gbs: base.get("gbs"),
                                            base, fits_only: 0, ranked: 0 });
    const best = new Map();
    const axes = { cp: new Set(), mbs: new Set(), tp: new Set(), pp: new Set() };
    try {
        while (search.step()) {
            const l = search.layout, r = search.report;
            const k = { cp: l.get("cp"), mbs: l.get("mbs"), tp: l.get("tp"), pp: l.get("pp") };
            for (const a of Object.keys(axes)) axes[a].add(k[a]);
            const key = `${k.cp}/${k.mbs}/${k.tp}/${k.pp}`;
            const w = { verdict: r.verdict, tflops: r.metric("tflops_per_gpu"), peak: r.peak_bytes };
            const b = best.get(key);
            if (!b || VERDICT_ORDER[w.verdict] < VERDICT_ORDER[b.verdict] ||
                (w.verdict === b.verdict && w.tflops !== null && (b.tflops === null || w.tflops > b.tflops)))
                best.set(key, w);
        }
    } finally {
        search.free();
    }
    const sorted = (s) => [...s].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const [cps, mbss, tps, pps] = [sorted(axes.cp), sorted(axes.mbs).slice(0, 6), sorted(axes.tp), sorted(axes.pp)];
    const panels = [];
    for (const c of cps) for (const b of mbss) {
        const t = document.createElement("table");
        t.className = "landscape";
        t.append(cell("caption", `cp ${c}, mbs ${b}`));
        const head = document.createElement("tr");
        head.append(cell("td", ""), ...tps.map((tp) => cell("th", `tp ${tp}`, { scope: "col" })));
        t.append(head);
        for (const p of pps) {
            const tr = document.createElement("tr");
            tr.append(cell("th", `pp ${p}`, { scope: "row" }));
            for (const tp of tps) {
                const w = best.get(`${c}/${b}/${tp}/${p}`);
                const text = !w ? "—" : w.verdict !== "oom" && w.tflops !== null ? `${w.tflops.toFixed(0)}` : `${gib(w.peak)}G`;
                const label = !w ? "no valid layout" : `${w.verdict}, ${w.tflops !== null && w.verdict !== "oom"
                    ? `${w.tflops.toFixed(0)} TFLOP/s per GPU` : `peak ${gib(w.peak)} GiB`}`;
                tr.append(cell("td", text, { class: w ? w.verdict : "none", title: label, "aria-label": label }));
            }
            t.append(tr);
        }
        panels.push(t);
    }
    $("landscape").replaceChildren(...panels);
}

// --- Megatron check -----------------------------------------------------------------

function runCheck(ev) {
    ev.preventDefault();
    clearErrors();
    $("check-warnings").replaceChildren();
    let imported, device;
    try {
        const world = $("check-world").value.trim() || field_value("world");
        // Shell-style comments and line continuations are not arguments.
        const text = $("megatron-args").value.split("\n").map((line) => line.replace(/(^|\s)#.*$/, ""))
            .join(" ").replace(/\\\s/g, " ");
        imported = m4.importMegatron(text, { worldSize: world });
        device = formDevice();
        imported.warnings.forEach((w) => $("check-warnings").append(cell("li", w)));
        const r = showEstimate(imported.model, imported.layout, device,
                               `Megatron command line on ${world} x ${gpuName(device)}`);
        status(`Checked: ${r.verdict}.`);
        $("estimate").scrollIntoView();
    } catch (e) {
        fail("check-error", e);
    } finally {
        imported?.model.free(); imported?.layout.free(); device?.free();
    }
}

// --- start ------------------------------------------------------------------------

async function main() {
    try {
        m4 = await load();
    } catch (e) {
        status(`The library did not load: ${e.message}. Open the page from a web server, or start the browser ` +
            "with --allow-file-access-from-files.");
        return;
    }
    setText("lib-version", `libmem4d ${m4.version}`);
    buildForm();
    setupDrop();
    $("gpu").addEventListener("change", fillDevice);
    $("job").addEventListener("submit", (ev) => { ev.preventDefault(); runEstimate(); });
    $("plan-btn").addEventListener("click", runPlan);
    $("check-form").addEventListener("submit", runCheck);
    $("estimate-flags-btn").addEventListener("click", () => copyFrom("estimate-flags"));
    $("plan-flags-btn").addEventListener("click", () => copyFrom("plan-flags"));
    const ms = performance.now();
    document.documentElement.dataset.readyMs = ms.toFixed(1);
    status(`Ready (libmem4d ${m4.version}, loaded in ${ms.toFixed(0)} ms). Choose a job, then Estimate or Plan.`);
}

main();
