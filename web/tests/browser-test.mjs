// SPDX-License-Identifier: MIT
// The page in headless Chromium (puppeteer-core), against the CLI's own JSON.
//
//   node web/tests/browser-test.mjs --site DIR --expected DIR --artifacts DIR --node-modules DIR
//
// --expected holds what scripts/ci.d/80-web.sh had the native CLI print:
// golden.json (mem4d estimate --json of the paper's golden job), golden40.json
// (the same on a 40 GiB GPU), plan.json and plan405.json (mem4d plan --json),
// check.json (mem4d check --json), moe.json (mem4d estimate --json of an MoE job), broken.txt (the CLI's error line for a
// truncated config.json), tp3.txt (its error line for tp 3).
// Prints the page's ready time, the time of a Llama-3.1-405B plan on 16,384
// GPUs in the browser and the .wasm size; saves a screenshot of each state.
// Exits non-zero at the first difference.

import { createServer } from "node:http";
import { readFileSync, statSync, mkdirSync, existsSync } from "node:fs";
import { createRequire } from "node:module";
import { extname, join, normalize, resolve } from "node:path";
import { gzipSync } from "node:zlib";

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) =>
    (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []));
for (const k of ["site", "expected", "artifacts", "node-modules"])
    if (!args[k]) throw new Error(`missing --${k}`);
const site = resolve(args.site);
const expectedDir = resolve(args.expected);
const artifacts = resolve(args.artifacts);
const dataDir = resolve(args.data || "tests/data");
mkdirSync(artifacts, { recursive: true });
const puppeteer = createRequire(join(resolve(args["node-modules"]), "x.js"))("puppeteer-core");
const expected = (name) => readFileSync(join(expectedDir, name), "utf8");
const GIB = 2 ** 30;

let failures = 0;
function check(ok, what, detail = "") {
    if (ok) {
        console.log(`ok    ${what}`);
    } else {
        failures++;
        console.log(`FAIL  ${what}${detail ? `: ${detail}` : ""}`);
    }
}

// --- a static server for the site, on loopback -----------------------------------
const TYPES = { ".html": "text/html", ".js": "text/javascript", ".mjs": "text/javascript",
                ".css": "text/css", ".wasm": "application/wasm", ".json": "application/json" };
const server = createServer((req, res) => {
    const path = normalize(join(site, decodeURIComponent(new URL(req.url, "http://x").pathname)));
    const file = path.endsWith("/") ? join(path, "index.html") : path;
    if (!file.startsWith(site) || !existsSync(file) || !statSync(file).isFile()) {
        res.writeHead(404);
        res.end();
        return;
    }
    res.writeHead(200, { "Content-Type": TYPES[extname(file)] || "application/octet-stream" });
    res.end(readFileSync(file));
});
await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
const origin = `http://127.0.0.1:${server.address().port}`;

const browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
           "--allow-file-access-from-files", "--js-flags=--expose-gc"],
});
await browser.defaultBrowserContext().overridePermissions(origin, ["clipboard-read", "clipboard-write",
                                                                  "clipboard-sanitized-write"]);
const page = await browser.newPage();
await page.setViewport({ width: 1366, height: 900 });  // a laptop screen
const foreign = [];
page.on("request", (r) => { if (!r.url().startsWith(origin)) foreign.push(r.url()); });
const consoleErrors = [];
page.on("pageerror", (e) => consoleErrors.push(String(e)));
page.on("console", (m) => { if (m.type() === "error") consoleErrors.push(m.text()); });

async function shot(name) {
    await page.screenshot({ path: join(artifacts, `${name}.png`), fullPage: true });
}

async function setField(id, value) {
    const tag = await page.$eval(`#${id}`, (e) => e.tagName);
    if (tag === "SELECT") {
        await page.select(`#${id}`, String(value));
    } else {
        await page.$eval(`#${id}`, (e) => { e.value = ""; });
        await page.type(`#${id}`, String(value));
    }
}

try {
    // --- ready ------------------------------------------------------------------
    await page.goto(`${origin}/index.html`);
    await page.waitForSelector("html[data-ready-ms]", { timeout: 10000 });
    const readyMs = Number(await page.$eval("html", (e) => e.dataset.readyMs));
    console.log(`page ready: ${readyMs.toFixed(0)} ms after navigation (target < 1000 ms)`);
    const wasm = readFileSync(join(site, "mem4d", "libmem4d.wasm"));
    console.log(`libmem4d.wasm: ${wasm.length} bytes (${gzipSync(wasm, { level: 9 }).length} gzipped)`);
    await shot("01-ready");

    // Every control is labelled; every button says what it does.
    const unlabelled = await page.$$eval("input, select, textarea, button", (els) => els
        .filter((e) => !(e.labels && e.labels.length) && !e.getAttribute("aria-label") && !e.textContent.trim())
        .map((e) => e.id || e.outerHTML.slice(0, 60)));
    check(unlabelled.length === 0, "every form control has a label", unlabelled.join(", "));
    const presets = await page.$$eval("#model option", (o) => o.map((x) => x.value));
    check(presets.includes("llama3.1-8b") && presets.includes("llama3.1-405b"), "model presets come from the library");

    // --- the paper's golden job -----------------------------------------------------
    await setField("model", "llama3.1-8b");
    await setField("gpu", "h100-80");
    await setField("layout-world", 4);
    await setField("layout-tp", 2);
    await setField("layout-seq", 8192);
    await setField("layout-gbs", 0);
    await setField("layout-mode", "paper");
    // Keyboard: focus the Estimate button and press Enter.
    await page.focus("#estimate-btn");
    await page.keyboard.press("Enter");
    await page.waitForSelector("#estimate:not([hidden])");
    const golden = JSON.parse(expected("golden.json"));
    const shown = await page.evaluate(() => {
        const s = document.getElementById("estimate").dataset;
        const stages = [...document.querySelectorAll("#stages tbody tr")].map((tr) =>
            Object.fromEntries([...tr.querySelectorAll("td[data-term]")].map((td) =>
                [td.dataset.term, { value: td.dataset.value, text: td.textContent }])));
        return { verdict: s.verdict, peak: s.peakBytes, device: s.deviceBytes, stages,
                 line: document.getElementById("verdict").textContent };
    });
    check(shown.verdict === golden.verdict, "golden job: verdict as the CLI's", `${shown.verdict} vs ${golden.verdict}`);
    check(shown.peak === String(golden.peak_bytes), "golden job: peak bytes as the CLI's", `${shown.peak} vs ${golden.peak_bytes}`);
    check(shown.device === String(golden.device_bytes), "golden job: device bytes as the CLI's");
    check(shown.stages.length === golden.stages.length, "golden job: as many stages as the CLI");
    let compared = 0;
    golden.stages.forEach((cli, i) => {
        for (const [key, value] of Object.entries(cli)) {
            if (key === "stage") continue;
            const term = key;  // the CLI's keys are the library's term names
            const cell = shown.stages[i] && shown.stages[i][term];
            check(cell && cell.value === String(value), `golden job: stage ${i} ${term} = ${value}`,
                  cell ? `page shows ${cell.value}` : "not on the page");
            if (cell && key.endsWith("_bytes"))
                check(cell.text === (value / GIB).toFixed(2), `golden job: stage ${i} ${term} shown as ${(value / GIB).toFixed(2)} GiB`,
                      cell.text);
            compared++;
        }
    });
    check(compared >= 10, `golden job: ${compared} numbers compared with mem4d estimate --json`);
    // The paper's golden row (Llama-3.1-8B, t 2, c 1, p 1, b 1, world 4).
    const st = shown.stages[0];
    const wo = (Number(st.weights_bytes.value) + Number(st.gradients_bytes.value) + Number(st.optimizer_bytes.value)) / GIB;
    check(Math.abs(wo - 44.87260437011719) < 1e-9, "golden job: weights+optimizer 44.87260437011719 GiB", String(wo));
    check(Math.abs(Number(st.activations_bytes.value) / GIB - 22.64453125) < 1e-9, "golden job: activations 22.64453125 GiB");
    check(/tight/.test(shown.line) && /67\.52 GiB of 80\.00 GiB/.test(shown.line), "golden job: the verdict line reads", shown.line);
    const flags = await page.$eval("#estimate-flags", (e) => e.value);
    check(/^--tensor-model-parallel-size 2 --context-parallel-size 1 --pipeline-model-parallel-size 1 /.test(flags),
          "golden job: the layout's Megatron flags", flags);
    await shot("02-golden-estimate");

    // The same job on a described GPU: h100-80's settings with 40 GiB of memory.
    await page.click("#gpu-custom summary");
    await setField("device-memory_bytes", 40 * GIB);
    await page.click("#estimate-btn");
    await page.waitForFunction((b) => document.getElementById("estimate").dataset.deviceBytes === b, {}, String(40 * GIB));
    const small = JSON.parse(expected("golden40.json"));
    const got40 = await page.$eval("#estimate", (e) => [e.dataset.verdict, e.dataset.peakBytes]);
    check(got40[0] === small.verdict && got40[1] === String(small.peak_bytes),
          "described GPU (40 GiB): verdict and peak as mem4d estimate --gpu-memory-gib 40", got40.join(" "));
    if (await page.$("#device-fields .hint"))  // where the library says which settings are bytes
        check(/= 40\.00 GiB/.test(await page.$eval("#device-fields .hint", (e) => e.textContent)),
              "described GPU: the size reads in GiB");
    await shot("02b-described-gpu");
    await setField("gpu", "a100-80");
    await setField("gpu", "h100-80");  // back to the preset's own settings
    await page.click("#gpu-custom summary");

    // --- a mixture of experts: the step's expert terms, against mem4d estimate --json --
    await setField("model", "mixtral-8x7b");
    await setField("layout-mode", "full");
    await setField("layout-world", 8);
    await setField("layout-tp", 1);
    await setField("layout-seq", 4096);
    await setField("layout-gbs", 64);
    await setField("layout-ep", 8);
    await page.click("#estimate-btn");
    await page.waitForFunction(() => document.querySelector('#metrics [data-metric="expert_compute_s"]'));
    const moe = JSON.parse(expected("moe.json"));
    const terms = await page.$$eval("#metrics [data-metric]", (els) =>
        Object.fromEntries(els.map((e) => [e.dataset.metric, Number(e.dataset.value)])));
    for (const k of ["step_time_s", "expert_compute_s", "router_permute_s", "ep_comm_s"])
        check(moe.speed[k] > 0 && Math.abs(terms[k] / moe.speed[k] - 1) < 1e-6,
              `MoE job (Mixtral-8x7B, ep 8): ${k} as mem4d estimate --json`, `${terms[k]} vs ${moe.speed[k]}`);
    // Which attention the job runs, by name, as mem4d estimate --json's attention_kernel and softmax_fallback.
    const attn = await page.$$eval("#metrics [data-info]", (els) =>
        Object.fromEntries(els.map((e) => [e.dataset.info, e.textContent])));
    const fallback = moe.softmax_fallback ? "yes: PyTorch's fp32 softmax" : "no";
    check(attn.attention_kernel === moe.attention_kernel && attn.softmax_fallback === fallback,
          "MoE job: the attention kernel and softmax as mem4d estimate --json",
          `${attn.attention_kernel}, ${attn.softmax_fallback} vs ${moe.attention_kernel}, ${moe.softmax_fallback}`);
    await shot("02c-moe-estimate");
    await setField("layout-ep", 1);  // the golden job's fields again, as the plan below expects them
    await setField("layout-tp", 2);
    await setField("layout-seq", 8192);

    // --- a plan, against mem4d plan --json --------------------------------------------
    await setField("model", "llama3.1-70b");
    await setField("layout-world", 64);
    await setField("layout-gbs", 512);
    await setField("layout-mode", "full");
    await page.click("#plan-btn");
    await page.waitForSelector("#plan:not([hidden])");
    await page.waitForFunction(() => document.querySelectorAll("#landscape table").length > 0, { timeout: 10000 });
    const plan = JSON.parse(expected("plan.json"));
    const rows = await page.$$eval("#plan-table tbody tr", (trs) => trs.map((tr) => ({
        ...Object.fromEntries([...tr.querySelectorAll("[data-col]")].map((c) => [c.dataset.col, c.dataset.value])),
        first_stage_layers: tr.dataset.first_stage_layers, last_stage_layers: tr.dataset.last_stage_layers })));
    check(rows.length >= plan.length, `plan: at least ${plan.length} rows`, String(rows.length));
    plan.forEach((cli, i) => {
        const row = rows[i] || {};
        const bad = [];
        for (const [key, value] of Object.entries(cli)) {
            if (key === "device_bytes") continue;  // the same for every row: in the estimate view
            if (!(key in row)) {
                bad.push(`${key} is not on the page`);
                continue;
            }
            let ok;
            if (typeof value === "number" && !Number.isInteger(value))
                ok = Math.abs(Number(row[key]) - value) <= 1e-8 * Math.abs(value);  // the CLI prints %.9g
            else if (typeof value === "boolean")
                ok = row[key] === (value ? "1" : "0");
            else
                ok = String(value) === row[key];
            if (!ok) bad.push(`${key} ${row[key]} vs ${value}`);
        }
        check(bad.length === 0, `plan: row ${i + 1} as mem4d plan --json`, bad.join(", "));
    });
    const summary = await page.$eval("#plan-summary", (e) => e.textContent);
    console.log(`plan in the page (llama3.1-70b, 64 GPUs, incl. reading ${rows.length} rows): ${summary}`);
    await shot("03-plan");

    // Sorting by a column (keyboard), then choosing a layout.
    await page.focus('#plan-table button[data-sort="peak_bytes"]');
    await page.keyboard.press("Enter");
    let peaks = await page.$$eval('#plan-table tbody [data-col="peak_bytes"]', (c) => c.map((x) => x.dataset.value));
    peaks.forEach((p, i) => { peaks[i] = BigInt(p); });
    check(peaks.every((p, i) => i === 0 || peaks[i - 1] <= p), "plan: sorted by peak, ascending");
    check(await page.$eval('#plan-table th[aria-sort]', (t) => t.getAttribute("aria-sort")) === "ascending",
          "plan: the sorted column says so (aria-sort)");
    await page.click('#plan-table button[data-sort="rank"]');
    await page.click('#plan-table tbody tr[data-rank="1"] button');
    const chosenFlags = await page.$eval("#plan-flags", (e) => e.value);
    const p0 = plan[0];
    check(chosenFlags.startsWith(`--tensor-model-parallel-size ${p0.tp} --context-parallel-size ${p0.cp} ` +
                                 `--pipeline-model-parallel-size ${p0.pp} --micro-batch-size ${p0.mbs} `),
          "plan: the chosen layout's Megatron flags", chosenFlags);
    await page.click("#plan-flags-btn");
    const copied = await page.evaluate(() => navigator.clipboard.readText());
    check(copied === chosenFlags, "plan: Copy puts the flags on the clipboard", copied);
    const chosenPeak = await page.$eval("#estimate", (e) => e.dataset.peakBytes);
    check(chosenPeak === String(plan[0].peak_bytes), "plan: the chosen layout's estimate has the plan's peak");
    const cells = await page.$$eval("#landscape td.fits, #landscape td.tight, #landscape td.oom", (c) => c.length);
    check(cells > 0, `plan: the landscape has ${cells} coloured cells`);
    await page.$eval("#plan", (e) => e.scrollIntoView());
    await shot("04-plan-chosen");

    // --- Llama-3.1-405B on 16,384 GPUs, in the browser --------------------------------
    const big = await page.evaluate(async () => {
        const { load } = await import("./mem4d/mem4d.js");
        const m4 = await load();
        const model = m4.Model.preset("llama3.1-405b");
        const device = m4.Device.preset("h100-80");
        const times = [];
        let first = null;
        for (let i = 0; i < 7; i++) {
            const t0 = performance.now();
            const search = m4.plan(model, device, { gpus: 16384, seq: 8192, gbs: 2048, tie_break: 1 });  // as mem4d plan
            const top = search.take(10);
            const stats = search.stats;
            search.free();
            times.push(performance.now() - t0);
            if (!first) first = { n: top.length, tp: String(top[0]?.layout.get("tp")), valid: String(stats.valid),
                                  peak: String(top[0]?.report.peak_bytes) };
            top.forEach((x) => x.layout.free());
        }
        model.free();
        device.free();
        times.sort((a, b) => a - b);
        return { median: times[3], min: times[0], first };
    });
    const bigCli = JSON.parse(expected("plan405.json"));
    console.log(`plan llama3.1-405b on 16384 x h100-80 (seq 8192, gbs 2048, top 10) in the browser: ` +
                `median ${big.median.toFixed(1)} ms, best ${big.min.toFixed(1)} ms of 7 (target < 50 ms); ` +
                `${big.first.valid} valid layouts`);
    check(big.first.n === Math.min(10, bigCli.length) && big.first.tp === String(bigCli[0].tp) &&
          big.first.peak === String(bigCli[0].peak_bytes), "405B plan: the browser's first row is the CLI's");

    // --- the JS binding's plan items say whether each is equivalent to the fastest --------
    const eq = await page.evaluate(async () => {
        const { load } = await import("./mem4d/mem4d.js");
        const m4 = await load();
        const model = m4.Model.preset("llama3.1-70b");
        const device = m4.Device.preset("h100-80");
        const job = { gpus: 64, seq: 8192, gbs: 512 };
        const search = m4.plan(model, device, { ...job, tie_break: 1 });  // as mem4d plan
        const items = search.take();
        const flags = items.map((x) => x.equivalent_to_fastest);
        const equivalent = Number(search.stats.equivalent);
        search.reset();  // counted afresh: the first of a search run again is the fastest again
        const again = search.next();
        search.free();
        const plain = m4.plan(model, device, job);
        const untied = plain.take().map((x) => x.equivalent_to_fastest);
        plain.free();
        for (const x of [...items, again]) x.layout.free();
        model.free();
        device.free();
        return { flags, equivalent, first: again.equivalent_to_fastest, untied };
    });
    check(plan.every((cli, i) => eq.flags[i] === cli.equivalent_to_fastest) && plan.some((cli) => cli.equivalent_to_fastest),
          "JS plan items: equivalent_to_fastest as mem4d plan --json's", JSON.stringify(eq.flags.slice(0, plan.length)));
    check(eq.flags.filter(Boolean).length === eq.equivalent && eq.equivalent > 1 && eq.flags.length > eq.equivalent &&
          eq.first,
          "JS plan items: the flags count stats.equivalent; a reset search's first is equivalent",
          `${eq.flags.filter(Boolean).length} vs ${eq.equivalent}, ${eq.first}`);
    check(eq.untied.length > 0 && !eq.untied.some(Boolean), "JS plan items: none without tie_break");

    // --- a broken config.json, then a good one dropped ---------------------------------
    const input = await page.$("#config-file");
    await input.uploadFile(join(dataDir, "hf", "truncated.json"));
    await page.waitForFunction(() => document.getElementById("model-error").textContent.length > 0);
    const sentence = await page.$eval("#model-error", (e) => e.textContent);
    const cliLine = expected("broken.txt").trim();
    check(sentence.length > 0 && cliLine.endsWith(sentence), "broken config.json: the library's sentence",
          `page "${sentence}", CLI "${cliLine}"`);
    await page.$eval("#job", (e) => e.scrollIntoView());
    await shot("05-broken-config");
    const good = readFileSync(join(dataDir, "hf", "llama3.1-8b.json"), "utf8");
    await page.evaluate((text) => {
        const dt = new DataTransfer();
        dt.items.add(new File([text], "config.json", { type: "application/json" }));
        document.getElementById("drop").dispatchEvent(new DragEvent("drop", { dataTransfer: dt, bubbles: true }));
    }, good);
    await page.waitForFunction(() => document.getElementById("model").value === "config.json");
    check((await page.$eval("#model-error", (e) => e.textContent)) === "", "dropped config.json: no error");
    const note = await page.$eval("#model-note", (e) => e.textContent);
    check(/8,030,261,248 parameters/.test(note), "dropped config.json: read by the library", note);

    // --- a bad layout: the library's sentence ---------------------------------------------
    await setField("layout-world", 3);
    await setField("layout-tp", 3);
    await setField("layout-gbs", 0);
    await page.click("#estimate-btn");
    await page.waitForFunction(() => document.getElementById("job-error").textContent.length > 0);
    const tp3 = await page.$eval("#job-error", (e) => e.textContent);
    check(tp3.length > 0 && expected("tp3.txt").includes(tp3), "tp 3: the library's sentence", `page "${tp3}"`);

    // --- a Megatron command line ----------------------------------------------------------
    const argsText = readFileSync(join(dataDir, "megatron", "llama3-8b-tp1-cp2.args"), "utf8");
    await page.$eval("#megatron-args", (e, v) => { e.value = v; }, argsText);
    await setField("check-world", 8);
    await page.click("#check-btn");
    await page.waitForFunction(() => /Megatron command line/.test(document.getElementById("verdict").textContent));
    const checked = JSON.parse(expected("check.json"));
    const got = await page.$eval("#estimate", (e) => ({ peak: e.dataset.peakBytes, verdict: e.dataset.verdict }));
    check(got.peak === String(checked.report.peak_bytes) && got.verdict === checked.report.verdict,
          "Megatron check: peak and verdict as mem4d check --json", JSON.stringify(got));
    const warnings = await page.$$eval("#check-warnings li", (li) => li.map((x) => x.textContent));
    check(JSON.stringify(warnings) === JSON.stringify(checked.warnings), "Megatron check: the CLI's warnings",
          JSON.stringify(warnings));
    await shot("06-megatron-check");

    // --- the binding itself: errors, BigInt, free() ---------------------------------------
    const binding = await page.evaluate(async () => {
        const { load, Mem4dError } = await import("./mem4d/mem4d.js");
        const m4 = await load();
        const out = {};
        // The generated tables and the loaded library agree.
        const { ENUMS, SIGNATURES } = await import("./mem4d/capi.js");
        out.missing = m4.missing;
        out.signatures = SIGNATURES.length;
        out.counts = [["mem4d_status", "mem4d_status_count"], ["mem4d_term", "mem4d_term_count"],
                      ["mem4d_info", "mem4d_info_count"], ["mem4d_metric", "mem4d_metric_count"],
                      ["mem4d_search_option", "mem4d_search_option_count"],
                      ["mem4d_layout_param", "mem4d_layout_param_count"], ["mem4d_model_param", "mem4d_model_param_count"],
                      ["mem4d_device_param", "mem4d_device_param_count"]]
            .filter(([, fn]) => m4.has(fn))
            .map(([e, fn]) => [e, Object.keys(ENUMS[e]).length, m4.c[fn]()]);
        out.statusNames = Object.entries(ENUMS.mem4d_status).every(([name, v]) =>
            !m4.has("mem4d_status_name") || m4.c.mem4d_status_name(v) === name);
        try { m4.Model.preset("no-such-model"); } catch (e) {
            out.preset = [e instanceof Mem4dError, e.statusName, e.message];
        }
        const model = m4.Model.preset("llama3.1-8b");
        const layout = new m4.Layout({ tp: 2, world: 4, seq: 8192, mode: "paper" });
        const device = m4.Device.preset("h100-80");
        const r = m4.estimate(model, layout, device);
        out.bigint = typeof r.peak_bytes === "bigint" && r.peak_bytes > 2n ** 32n;
        // The largest value a device key takes, beyond 2^53: exact both ways.
        const widest = m4.Device.keys().map((k) => [k, m4.Device.bounds(k)[1]]).sort((a, b) => (a[1] < b[1] ? 1 : -1))[0];
        device.setOne(widest[0], widest[1]);
        out.u64 = [String(widest[1]), String(device.get(widest[0])), widest[1] > 2n ** 53n];
        try { layout.setOne("tp", -1); } catch (e) { out.negative = e.statusName; }
        model.free();
        model.free();  // a second free is harmless
        try { m4.estimate(model, layout, device); } catch (e) { out.freed = e.statusName; }
        layout.free();
        device.free();
        // Objects dropped without free() are freed by the collector.
        for (let i = 0; i < 1000; i++) new m4.Layout({ tp: 2 });
        for (let i = 0; i < 5 && m4.finalized < 1000; i++) {
            window.gc();
            await new Promise((ok) => setTimeout(ok, 50));
        }
        out.finalized = m4.finalized;
        return out;
    });
    check(binding.missing.length === 0, `binding: the wasm exports all ${binding.signatures} functions of capi.js`,
          binding.missing.join(" "));
    for (const [e, table, lib] of binding.counts)
        check(table === lib, `binding: ${e} has ${lib} values in the library and in capi.js`, `capi.js ${table}`);
    check(binding.statusNames, "binding: status names in capi.js are the library's");
    check(binding.preset && binding.preset[0] && binding.preset[1] === "E_UNKNOWN_PRESET",
          "binding: an unknown preset is Mem4dError E_UNKNOWN_PRESET", JSON.stringify(binding.preset));
    check(binding.bigint, "binding: uint64 results are BigInts");
    check(binding.u64[0] === binding.u64[1] && binding.u64[2], "binding: a uint64 beyond 2^53 round-trips",
          JSON.stringify(binding.u64));
    check(binding.negative === "E_RANGE", "binding: a negative value is E_RANGE");
    check(binding.finalized >= 1000, "binding: 1000 dropped objects were freed by the collector",
          String(binding.finalized));
    check(binding.freed === "E_INVALID_ARG", "binding: a freed object is refused (E_INVALID_ARG), twice-free is safe");

    // --- a torchtitan job TOML read by the library into the form (issue 24) -------------
    await setField("layout-world", 256);  // 256 GPUs: dp_shard -1 takes 256 / (tp 8 x pp 4) = 8
    const ttInput = await page.$("#torchtitan-file");
    await ttInput.uploadFile(join(dataDir, "torchtitan", "llama4_17bx128e-2026.toml"));
    await page.waitForFunction(() => /Read llama4/.test(document.getElementById("layout-note").textContent) ||
                                     document.getElementById("job-error").textContent.length > 0);
    const tt = await page.evaluate(() => ({
        tp: document.getElementById("layout-tp").value, pp: document.getElementById("layout-pp").value,
        dp: document.getElementById("layout-dp").value, error: document.getElementById("job-error").textContent,
        note: document.getElementById("layout-note").textContent }));
    check(tt.error === "" && tt.tp === "8" && tt.pp === "4" && tt.dp === "8",
          "torchtitan TOML: tp 8, pp 4, dp 256 / 32 = 8 in the form", JSON.stringify(tt));
    const ttBad = await page.evaluate(async () => {
        const { load } = await import("./mem4d/mem4d.js");
        const m4 = await load();
        try {
            m4.Layout.fromTorchtitanToml("[compile]\nenable = \"no\"\n", 8n);
            return "accepted";
        } catch (e) {
            return e.message;
        }
    });
    check(/compile\.enable is a string, not true or false/.test(ttBad), "torchtitan TOML: a bad type is the library's sentence",
          ttBad);

    check(foreign.length === 0, "the page made no request beyond its own files", foreign.join(" "));

    // The same site from file:// (a browser that allows file access).
    const local = await browser.newPage();
    await local.goto(`file://${join(site, "index.html")}`);
    await local.waitForSelector("html[data-ready-ms]", { timeout: 10000 });
    check((await local.$$eval("#model option", (o) => o.length)) === presets.length, "the page works from file://");
    await local.close();
    // Without that permission the page says how to open it, instead of hanging.
    const strict = await puppeteer.launch({ executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
                                            headless: true, args: ["--no-sandbox", "--disable-gpu"] });
    try {
        const blocked = await strict.newPage();
        await blocked.goto(`file://${join(site, "index.html")}`);
        await blocked.waitForFunction(() => /allow-file-access-from-files/.test(
            document.getElementById("status").textContent), { timeout: 10000 });
        check(true, "from file:// without file access, the page says how to open it");
    } finally {
        await strict.close();
    }
    check(consoleErrors.length === 0, "no error in the browser console", consoleErrors.join(" | "));
} catch (e) {
    failures++;
    console.log(`FAIL  ${e.stack || e}`);
    await shot("99-failure").catch(() => {});
} finally {
    await browser.close();
    server.close();
}
console.log(`screenshots: ${artifacts}`);
process.exit(failures ? 1 : 0);
