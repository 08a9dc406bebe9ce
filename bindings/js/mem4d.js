// SPDX-License-Identifier: MIT
// JavaScript bindings of libmem4d (WebAssembly), an ES module that mirrors the
// Python binding (bindings/python/mem4d):
//
//     import { load } from "./mem4d.js";
//     const m4 = await load();                 // fetches libmem4d.wasm beside this file
//     const model = m4.Model.preset("llama3.1-70b");
//     const layout = new m4.Layout({ tp: 8, pp: 4, dp: 2, mbs: 1, seq: 8192 });
//     const report = m4.estimate(model, layout, m4.Device.preset("h100-80"));
//     report.verdict, report.peak_bytes            // "fits", 68017617634n
//
// Objects own a C handle: free() releases it at once (later calls on it fail
// with E_INVALID_ARG, as in C), and a FinalizationRegistry releases the ones
// that are dropped. Failures throw Mem4dError with the library's status and
// its sentence. Every uint64_t is a BigInt; setters also take Numbers.
//
// The tables (signatures, enum values) are in capi.js, generated from the
// header; names, counts, bounds and presets are asked of the library itself.

import { ENUMS, SIGNATURES } from "./capi.js";

const STATUS = ENUMS.mem4d_status;
const SCRATCH_BYTES = 4096;
const STATUS_NAMES = Object.fromEntries(Object.entries(STATUS).map(([k, v]) => [v, k.replace(/^MEM4D_/, "")]));

/** A libmem4d call failed: .status (number), .statusName ("E_RANGE"), .message (the sentence). */
export class Mem4dError extends Error {
    constructor(status, message, statusName) {
        super(message);
        this.name = "Mem4dError";
        this.status = status;
        this.statusName = statusName || STATUS_NAMES[status] || String(status);
    }
}

/** The lower-case names of an enum's values, in value order ("step_time_s" for MEM4D_METRIC_STEP_TIME_S). */
function enumNames(enumName, prefix) {
    const out = [];
    for (const [k, v] of Object.entries(ENUMS[enumName])) out[v] = k.slice(prefix.length).toLowerCase();
    return out;
}

/**
 * Load the WebAssembly library. options.module: URL of the emscripten module
 * (default libmem4d.mjs beside this file); options.wasmBinary: the .wasm bytes,
 * when they are already at hand.
 */
export async function load(options = {}) {
    const url = options.module || new URL("./libmem4d.mjs", import.meta.url).href;
    const factory = (await import(url)).default;
    const settings = {};
    if (options.wasmBinary) settings.wasmBinary = options.wasmBinary;
    return new Library(await factory(settings));
}

/** The loaded library: C functions (lib.c.mem4d_*), classes and helpers. */
export class Library {
    constructor(wasm) {
        this.wasm = wasm;
        this.c = {};
        this.missing = [];
        this.finalized = 0;  // handles the collector freed (dropped without free())
        for (const [name, result, params] of SIGNATURES) {
            const fn = wasm["_" + name];
            if (typeof fn !== "function") {
                this.missing.push(name);  // an older library: the caller can tell by has()
                continue;
            }
            this.c[name] = this.#wrap(fn, result, params);
        }
        this.#scratch = wasm._malloc(SCRATCH_BYTES);
        this.#registry = new FinalizationRegistry(({ free, ptr }) => {
            free(ptr);
            this.finalized++;
        });
        bindClasses(this);
    }

    #registry;

    /** Whether the loaded library exports a function (newer ones have more). */
    has(name) {
        return name in this.c;
    }

    heap() {
        return this.wasm.HEAPU8;
    }

    /** Run fn(scratch) with n zeroed bytes of wasm memory, released afterwards. */
    withScratch(n, fn) {
        // Out-parameters are small and calls nest shallowly: a stack in one
        // block allocated once, with malloc only for what does not fit.
        const size = (Math.max(n, 8) + 7) & ~7;
        const fits = this.#top + size <= SCRATCH_BYTES;
        const p = fits ? this.#scratch + this.#top : this.wasm._malloc(size);
        if (!p) throw new Mem4dError(STATUS.MEM4D_E_NOMEM, "out of WebAssembly memory");
        if (fits) this.#top += size;
        this.heap().fill(0, p, p + size);
        try {
            return fn(p);
        } finally {
            if (fits) this.#top -= size;
            else this.wasm._free(p);
        }
    }

    #scratch = 0;
    #top = 0;

    // One DataView of wasm memory, renewed when the memory grows (its buffer changes).
    #view = null;

    view() {
        const buffer = this.wasm.HEAPU8.buffer;
        if (!this.#view || this.#view.buffer !== buffer) this.#view = new DataView(buffer);
        return this.#view;
    }

    readU64(p) {
        return this.view().getBigUint64(p, true);
    }

    readU32(p) {
        return this.view().getUint32(p, true);
    }

    readF64(p) {
        return this.view().getFloat64(p, true);
    }

    writeU64(p, v) {
        this.view().setBigUint64(p, BigInt.asUintN(64, BigInt(v)), true);
    }

    writeU32(p, v) {
        this.view().setUint32(p, v, true);
    }

    string(p) {
        return p ? this.wasm.UTF8ToString(p) : null;
    }

    /** Copy bytes (a string as UTF-8, or a Uint8Array) into new wasm memory: [ptr, length]; free with free(). */
    bytes(value) {
        const data = typeof value === "string" ? new TextEncoder().encode(value) : value;
        const p = this.wasm._malloc(data.length + 1);
        if (!p) throw new Mem4dError(STATUS.MEM4D_E_NOMEM, "out of WebAssembly memory");
        this.heap().set(data, p);
        this.heap()[p + data.length] = 0;
        return [p, data.length];
    }

    free(p) {
        this.wasm._free(p);
    }

    /** Throw Mem4dError unless status is MEM4D_OK (message: the call's sentence, else mem4d_strerror). */
    check(status, message) {
        if (status !== STATUS.MEM4D_OK) throw this.error(status, message);
    }

    error(status, message) {
        const name = this.has("mem4d_status_name") ? this.c.mem4d_status_name(status) : null;
        return new Mem4dError(status, message || this.c.mem4d_strerror(status) || `status ${status}`,
                              name ? name.replace(/^MEM4D_/, "") : undefined);
    }

    /** Give obj's C handle to the collector's care; returns the token for forget(). */
    track(obj, free, ptr) {
        this.#registry.register(obj, { free, ptr }, obj);
    }

    forget(obj) {
        this.#registry.unregister(obj);
    }

    #wrap(fn, result, params) {
        const lib = this;
        const fromC = {
            void: () => undefined,
            int: (r) => r,
            u32: (r) => r >>> 0,
            size: (r) => r >>> 0,
            u64: (r) => BigInt.asUintN(64, r),  // wasm returns i64 as a signed BigInt
            f64: (r) => r,
            str: (r) => lib.string(r),
            buf: (r) => r,
            ptr: (r) => r,
        }[result];
        // Handles pass their pointer, null passes NULL; uint64_t takes a BigInt.
        const plain = (v) => (v === null || v === undefined ? 0 : typeof v === "object" ? v.ptr : v);
        const u64 = (v) => BigInt.asUintN(64, BigInt(v));
        const toC = params.map((type) => (type === "u64" ? u64 : plain));
        const n = params.length;
        if (!params.includes("str")) {
            return function (...args) {
                const cargs = new Array(n);
                for (let i = 0; i < n; i++) cargs[i] = toC[i](args[i]);
                return fromC(fn(...cargs));
            };
        }
        // Strings (and byte arrays) are copied into wasm memory for the call.
        return function (...args) {
            const owned = [];
            try {
                const cargs = params.map((type, i) => {
                    const v = args[i];
                    if (type === "str" && (typeof v === "string" || v instanceof Uint8Array)) {
                        const [p] = lib.bytes(v);
                        owned.push(p);
                        return p;
                    }
                    return toC[i](v);
                });
                return fromC(fn(...cargs));
            } finally {
                owned.forEach((p) => lib.free(p));
            }
        };
    }
}

function bindClasses(lib) {
    const c = lib.c;
    const out = (fn) => lib.withScratch(8, (p) => (fn(p), lib.readU64(p)));

    /** A C handle owned by this object. */
    class Handle {
        #ptr;

        constructor(ptr, free) {
            this.#ptr = ptr;
            this.free = () => {
                if (this.#ptr) {
                    lib.forget(this);
                    free(this.#ptr);
                    this.#ptr = 0;
                }
            };
            lib.track(this, free, ptr);
        }

        /** The C pointer; 0 once freed (every C function refuses NULL with E_INVALID_ARG). */
        get ptr() {
            return this.#ptr;
        }
    }

    function newHandle(ctor, ...args) {
        return lib.withScratch(4, (p) => {
            const status = ctor(...args, p);
            lib.check(status);
            return lib.readU32(p);
        });
    }

    /** Shared parameter access for Model, Layout and Device (kind: "model", "layout", "device"). */
    function params(kind) {
        const fn = (verb) => c[`mem4d_${kind}_${verb}`];
        // A library's names do not change while it is loaded.
        const names = Array.from({ length: fn("param_count")() }, (_, i) => fn("param_name")(i));
        const keyCache = new Map();
        return class extends Handle {
            /** new X() (defaults), new X({name: value, ...}), or new X(pointer) to own a C handle. */
            constructor(init) {
                super(typeof init === "number" ? init : newHandle(fn("new")), fn("free"));
                if (init && typeof init === "object") this.set(init);
            }

            /** A built-in preset by name (models and devices). */
            static preset(name) {
                return new this(lib.withScratch(4, (p) => {
                    lib.check(fn("new_preset")(name, p), `unknown ${kind} preset '${name}'`);
                    return lib.readU32(p);
                }));
            }

            /** The names of the built-in presets. */
            static presets() {
                return Array.from({ length: fn("preset_count")() }, (_, i) => fn("preset_name")(i));
            }

            /** The enum value of a parameter name or alias ("tp", "tensor_model_parallel_size"). */
            static key(name) {
                if (typeof name === "number") return name;
                let key = keyCache.get(name);
                if (key === undefined) {
                    key = lib.withScratch(4, (p) => {
                        lib.check(fn("param_from_name")(name, p), `unknown ${kind} parameter '${name}'`);
                        return lib.readU32(p);
                    });
                    keyCache.set(name, key);
                }
                return key;
            }

            /** Canonical names of every parameter, in enum order. */
            static keys() {
                return [...names];
            }

            /** [min, max] accepted for a parameter (BigInts). */
            static bounds(name) {
                const key = this.key(name);
                return lib.withScratch(16, (p) => {
                    lib.check(fn("param_bounds")(key, p, p + 8));
                    return [lib.readU64(p), lib.readU64(p + 8)];
                });
            }

            /**
             * What a parameter's number means: "integer", "boolean", "choice",
             * "bytes", ... (mem4d_param_kind_name), or null from a library too
             * old to say.
             */
            static kind(name) {
                const f = fn("param_kind");
                if (!f) return null;
                const key = this.key(name);
                return lib.withScratch(4, (p) => {
                    lib.check(f(key, p));
                    return c.mem4d_param_kind_name(lib.readU32(p));
                });
            }

            /** The value a new object holds for a parameter (BigInt), or null from an older library. */
            static defaultValue(name) {
                const f = fn("param_default");
                if (!f) return null;
                const key = this.key(name);
                return out((p) => lib.check(f(key, p)));
            }

            /** The name of a value of an enumerated parameter ("full"), or null. */
            static valueName(name, value) {
                const f = fn("value_name");
                return f ? f(this.key(name), value) : null;
            }

            /** The name of this object's value of an enumerated parameter, or null. */
            valueName(name) {
                return this.constructor.valueName(name, this.get(name));
            }

            /** Set parameters by name: numbers, BigInts, booleans or text ("full", "rmsnorm", "true"). */
            set(values) {
                for (const [name, value] of Object.entries(values)) this.setOne(name, value);
                return this;
            }

            setOne(name, value) {
                if (typeof value === "string") {
                    lib.check(fn("set_str")(this, name, value),
                              `${kind} parameter '${name}' = '${value}' is not accepted`);
                    return;
                }
                const key = this.constructor.key(name);
                const v = typeof value === "boolean" ? BigInt(value) : value;
                if (!(typeof v === "bigint" || Number.isSafeInteger(v)) || BigInt(v) < 0n || BigInt(v) >= 1n << 64n)
                    throw new Mem4dError(STATUS.MEM4D_E_RANGE,
                                         `${kind} parameter '${name}' = ${value} is not an unsigned 64-bit integer`);
                const status = fn("set")(this, key, v);
                if (status === STATUS.MEM4D_E_RANGE) {
                    const [lo, hi] = this.constructor.bounds(key);
                    lib.check(status, `${kind} parameter '${name}' = ${value} is outside [${lo}, ${hi}]`);
                }
                lib.check(status);
            }

            /** A parameter's value (BigInt). */
            get(name) {
                const key = this.constructor.key(name);
                return out((p) => lib.check(fn("get")(this, key, p)));
            }

            /** Every parameter by canonical name (BigInts). */
            toObject() {
                return Object.fromEntries(names.map((k, i) => [k, this.get(i)]));
            }

            copy() {
                return new this.constructor(newHandle(fn("clone"), this));
            }
        };
    }

    function validateText(f, ...args) {
        lib.withScratch(512, (buf) => {
            const status = f(...args, buf, 512);
            lib.check(status, lib.string(buf));
        });
    }

    class Model extends params("model") {
        /** A model read from a Hugging Face config.json (text or bytes) by the library's reader. */
        static fromHfConfig(json) {
            const imp = new Importer();
            const model = new Model();
            const [p, n] = lib.bytes(json);
            try {
                imp.check(c.mem4d_import_hf_config_buffer(imp, p, n, model));
                model.warnings = imp.warnings;
                return model;
            } catch (e) {
                model.free();
                throw e;
            } finally {
                lib.free(p);
                imp.free();
            }
        }

        get name() {
            return c.mem4d_model_name(this);
        }

        set name(value) {
            lib.check(c.mem4d_model_set_name(this, value));
        }

        get numParams() {
            return out((p) => lib.check(c.mem4d_model_num_params(this, p)));
        }

        validate() {
            validateText(c.mem4d_model_validate, this);
        }
    }

    class Layout extends params("layout") {
        /**
         * A layout read from a torchtitan job TOML (text or bytes) by the library's
         * reader (mem4d_import_torchtitan_config_buffer): world is the number of GPUs
         * (0: the file's degrees must say), model gives torchtitan's pipeline split its
         * layers (may be null). .warnings holds the reader's warnings.
         */
        static fromTorchtitanToml(toml, world = 0n, model = null) {
            const imp = new Importer();
            const layout = new Layout();
            const [p, n] = lib.bytes(toml);
            try {
                imp.check(c.mem4d_import_torchtitan_config_buffer(imp, p, n, BigInt(world), model ?? 0, layout));
                layout.warnings = imp.warnings;
                return layout;
            } catch (e) {
                layout.free();
                throw e;
            } finally {
                lib.free(p);
                imp.free();
            }
        }

        /** Throw Mem4dError naming the first rule this layout breaks for model. */
        validate(model) {
            validateText(c.mem4d_validate, model, this);
        }

        /** The Megatron-LM flags that set this layout for model (one string). */
        megatronArgs(model) {
            if (!lib.has("mem4d_layout_megatron_args"))
                throw new Mem4dError(STATUS.MEM4D_E_UNSUPPORTED, "this libmem4d has no mem4d_layout_megatron_args()");
            const length = lib.withScratch(4, (p) => {
                const status = c.mem4d_layout_megatron_args(model, this, 0, 0, p);
                if (status !== STATUS.MEM4D_E_RANGE) lib.check(status);
                return lib.readU32(p);
            });
            return lib.withScratch(length + 1, (buf) => {
                lib.check(c.mem4d_layout_megatron_args(model, this, buf, length + 1, 0));
                return lib.string(buf);
            });
        }
    }

    class Device extends params("device") {
        get name() {
            return c.mem4d_device_name(this);
        }
    }

    class Importer extends Handle {
        constructor() {
            super(newHandle(c.mem4d_import_new), c.mem4d_import_free);
        }

        check(status) {
            lib.check(status, c.mem4d_import_message(this));
        }

        get warnings() {
            return Array.from({ length: c.mem4d_import_warning_count(this) }, (_, i) => c.mem4d_import_warning(this, i));
        }

        get worldSource() {
            return WORLD_SOURCES[c.mem4d_import_world_source(this)] ?? c.mem4d_import_world_source(this);
        }
    }

    // Names the library gives at run time where it can (newer ones describe
    // every enum); else the header's enum names, lower-cased.
    const names = (countFn, nameFn, enumName, prefix) => {
        const fallback = enumNames(enumName, prefix);
        const n = lib.has(countFn) ? c[countFn]() : fallback.length;
        return Array.from({ length: n }, (_, i) => (nameFn && lib.has(nameFn) && c[nameFn](i)) || fallback[i]);
    };
    const TERMS = names("mem4d_term_count", "mem4d_term_name", "mem4d_term", "MEM4D_TERM_");
    const INFOS = names("mem4d_info_count", "mem4d_info_name", "mem4d_info", "MEM4D_INFO_");
    const METRICS = names("mem4d_metric_count", "mem4d_metric_name", "mem4d_metric", "MEM4D_METRIC_");
    const STATS = names("mem4d_search_stat_count", "mem4d_search_stat_name", "mem4d_search_stat", "MEM4D_SEARCH_STAT_");
    const OPTIONS = names("mem4d_search_option_count", "mem4d_search_option_name", "mem4d_search_option",
                          "MEM4D_SEARCH_");
    const WORLD_SOURCES = enumNames("mem4d_world_source", "MEM4D_WORLD_");
    const SEARCHED = lib.has("mem4d_search_varies")
        ? Layout.keys().filter((_, i) => c.mem4d_search_varies(i))
        : ["tp", "cp", "pp", "dp", "mbs", "vpp", "recompute", "dist_opt"];

    /** Copy a successful C report into a plain object (holds no C memory). */
    function readReport(r) {
        const stages = [];
        lib.withScratch(8, (p) => {
            for (let s = 0; s < c.mem4d_report_num_stages(r); s++) {
                const stage = { stage: s };
                TERMS.forEach((term, t) => {
                    lib.check(c.mem4d_report_get(r, s, t, p));
                    stage[term] = lib.readU64(p);
                });
                // The moment the stage peaks at is a name, as in mem4d estimate --json.
                if ("peak_moment" in stage) stage.peak_moment = c.mem4d_moment_name(Number(stage.peak_moment));
                stages.push(stage);
            }
        });
        const info = {};
        lib.withScratch(8, (p) => INFOS.forEach((name, i) => {
            lib.check(c.mem4d_report_info(r, i, p));
            info[name] = lib.readU64(p);
        }));
        let metrics = {};
        lib.withScratch(8, (p) => {
            for (const [i, name] of METRICS.entries()) {
                const status = c.mem4d_report_metric(r, i, p);
                if (status === STATUS.MEM4D_E_UNSUPPORTED) {
                    metrics = null;  // speed was not predicted for this estimate
                    return;
                }
                lib.check(status);
                metrics[name] = lib.readF64(p);
            }
        });
        const peakStage = c.mem4d_report_peak_stage(r);
        return {
            mode: c.mem4d_mode_name(c.mem4d_report_mode(r)),
            verdict: c.mem4d_verdict_name(c.mem4d_report_verdict(r)),
            stages,
            peak_stage: peakStage,
            peak_bytes: c.mem4d_report_peak_bytes(r),
            // The peak stage's counterparts of torch.cuda.max_memory_allocated / _reserved.
            peak_allocated_bytes: stages[peakStage].peak_allocated_bytes,
            peak_reserved_bytes: stages[peakStage].peak_reserved_bytes,
            device_bytes: c.mem4d_report_device_bytes(r),
            info,
            // The attention kernel the job runs by the device key attention_kernel's names
            // ("cudnn"; "unfused": softmax attention, info.softmax_fallback its softmax), as
            // mem4d estimate --json's attention_kernel; null from a library without it.
            attention_kernel_name: "attention_kernel" in info
                ? Device.valueName("attention_kernel", info.attention_kernel) : null,
            metrics,
        };
    }

    /** A reusable C report (for loops that estimate many layouts). */
    class ReportBuffer extends Handle {
        constructor() {
            super(newHandle(c.mem4d_report_new), c.mem4d_report_free);
        }

        estimate(model, layout, device) {
            lib.check(c.mem4d_estimate(model, layout, device, this), c.mem4d_report_message(this));
            return readReport(this);
        }

        read() {
            return readReport(this);
        }

        // Cheap reads of the last estimate, for loops over many layouts.
        get verdict() {
            return c.mem4d_verdict_name(c.mem4d_report_verdict(this));
        }

        get peak_bytes() {
            return c.mem4d_report_peak_bytes(this);
        }

        /** A term (by name, "peak_reserved_bytes") of the peak stage. */
        peakTerm(name) {
            return lib.withScratch(8, (p) => {
                lib.check(c.mem4d_report_get(this, c.mem4d_report_peak_stage(this), TERMS.indexOf(name), p));
                return lib.readU64(p);
            });
        }

        get peak_allocated_bytes() {
            return this.peakTerm("peak_allocated_bytes");
        }

        get peak_reserved_bytes() {
            return this.peakTerm("peak_reserved_bytes");
        }

        /** A whole-job value by name ("attention_kernel", "softmax_fallback"), a BigInt. */
        info(name) {
            return lib.withScratch(8, (p) => {
                lib.check(c.mem4d_report_info(this, INFOS.indexOf(name), p));
                return lib.readU64(p);
            });
        }

        /** A metric by name ("tflops_per_gpu"), or null when speed was not predicted. */
        metric(name) {
            return lib.withScratch(8, (p) => {
                const status = c.mem4d_report_metric(this, METRICS.indexOf(name), p);
                if (status === STATUS.MEM4D_E_UNSUPPORTED) return null;
                lib.check(status);
                return lib.readF64(p);
            });
        }
    }

    function estimate(model, layout, device) {
        const buf = new ReportBuffer();
        try {
            return buf.estimate(model, layout, device);
        } finally {
            buf.free();
        }
    }

    /** A C search: constrain it, then iterate ({layout, report} items). */
    class Search extends Handle {
        constructor(model, device, base) {
            const ptr = lib.withScratch(4, (p) => {
                lib.check(c.mem4d_search_new(model, device, base, p));
                return lib.readU32(p);
            });
            super(ptr, c.mem4d_search_free);
            this.layout = new Layout();
            this.report = new ReportBuffer();
            const free = this.free;
            this.free = () => {
                free();
                this.layout.free();
                this.report.free();
            };
        }

        option(name, value) {
            const i = OPTIONS.indexOf(name);
            if (i < 0) throw new Mem4dError(STATUS.MEM4D_E_UNKNOWN_KEY, `unknown search option '${name}'`);
            lib.check(c.mem4d_search_set_option(this, i, BigInt(value)),
                      `search option ${name} = ${value} is not accepted`);
        }

        /** spec: a value (exact), {min, max}, or an array of allowed values. */
        constrain(name, spec) {
            const key = Layout.key(name);
            let status;
            if (Array.isArray(spec)) {
                const values = spec.map((v) => Search.value(name, v));
                status = lib.withScratch(8 * values.length, (p) => {
                    values.forEach((v, i) => lib.writeU64(p + 8 * i, v));
                    return c.mem4d_search_allow(this, key, p, values.length);
                });
            } else if (spec && typeof spec === "object") {
                status = c.mem4d_search_bound(this, key, Search.value(name, spec.min), Search.value(name, spec.max));
            } else {
                const v = Search.value(name, spec);
                status = c.mem4d_search_bound(this, key, v, v);
            }
            lib.check(status, `search constraint ${name} = ${JSON.stringify(spec, (_, v) =>
                typeof v === "bigint" ? String(v) : v)} is not accepted`);
        }

        /** A constraint's value: a number, or a value name parsed the library's way ("full"). */
        static value(name, spec) {
            if (typeof spec !== "string") return BigInt(spec);
            const probe = new Layout();
            try {
                probe.setOne(name, spec);
                return probe.get(name);
            } finally {
                probe.free();
            }
        }

        /** Advance to the next layout (in this.layout, its estimate in this.report); false at the end. */
        step() {
            const status = c.mem4d_search_next(this, this.layout, this.report);
            if (status === STATUS.MEM4D_END) return false;
            lib.check(status, "the search failed");
            return true;
        }

        /**
         * Whether the layout of the last step() is equivalent to the fastest: with
         * tie_break 1, its speed band overlaps the fastest's (the fastest's own too), as
         * mem4d plan marks the row "=" and plan --json's equivalent_to_fastest; false
         * without tie_break or a speed prediction, and for a layout that does not fit
         * (none is equivalent where none fits). The equivalent layouts are the first
         * stats.equivalent yielded (counted once the first is); this one is stats.yielded-th.
         */
        get equivalent_to_fastest() {
            return lib.withScratch(8, (p) => {
                lib.check(c.mem4d_search_stat_get(this, STATS.indexOf("yielded"), p));
                const yielded = lib.readU64(p);
                lib.check(c.mem4d_search_stat_get(this, STATS.indexOf("equivalent"), p));
                return yielded > 0n && yielded <= lib.readU64(p);
            });
        }

        /** The next {layout, report, equivalent_to_fastest} (copies the caller owns), or null at the end. */
        next() {
            return this.step() ? { layout: this.layout.copy(), report: this.report.read(),
                                   equivalent_to_fastest: this.equivalent_to_fastest } : null;
        }

        /** Up to n more items (all when n is omitted). */
        take(n = Infinity) {
            const items = [];
            for (let item; items.length < n && (item = this.next());) items.push(item);
            return items;
        }

        *[Symbol.iterator]() {
            for (let item; (item = this.next());) yield item;
        }

        reset() {
            lib.check(c.mem4d_search_reset(this));
        }

        get stats() {
            const s = {};
            lib.withScratch(8, (p) => STATS.forEach((name, i) => {
                lib.check(c.mem4d_search_stat_get(this, i, p));
                s[name] = lib.readU64(p);
            }));
            return s;
        }
    }

    /**
     * The layouts of model on `gpus` devices, fastest first, as a Search.
     * opts: gpus, seq, gbs; base (a Layout or an object of further fixed
     * settings); any search option by name (fits_only, ranked, ...); any
     * searched knob (tp, cp, ...) as a value, {min, max} or an array; any other
     * layout parameter as a fixed setting.
     */
    function plan(model, device, opts) {
        const { gpus, seq, gbs = 0, base, ...rest } = opts;
        const fixed = base instanceof Layout ? base.copy() : new Layout(base || {});
        const knobs = [];
        const options = [];
        try {
            for (const [name, spec] of Object.entries(rest)) {
                if (OPTIONS.includes(name)) options.push([name, spec]);
                else if (SEARCHED.includes(Layout.keys()[Layout.key(name)])) knobs.push([name, spec]);
                else fixed.setOne(name, spec);
            }
            fixed.set({ world: gpus, seq, gbs });
            const search = new Search(model, device, fixed);
            try {
                for (const [name, value] of options) search.option(name, value);
                for (const [name, spec] of knobs) search.constrain(name, spec);
            } catch (e) {
                search.free();
                throw e;
            }
            return search;
        } finally {
            fixed.free();
        }
    }

    /**
     * Read a Megatron-LM argument list (an array of arguments, or one string
     * split at white space). opts: env (an object, or "NAME=value" strings),
     * worldSize. Returns {model, layout, warnings, worldSource}.
     */
    function importMegatron(argv, opts = {}) {
        const args = typeof argv === "string" ? argv.split(/\s+/).filter(Boolean) : argv;
        let env = opts.env;
        if (env && !Array.isArray(env)) env = Object.entries(env).map(([k, v]) => `${k}=${v}`);
        const owned = [];
        const array = (items) => {
            const p = lib.wasm._malloc(4 * (items.length + 1));
            owned.push(p);
            items.forEach((s, i) => {
                const [sp] = lib.bytes(String(s));
                owned.push(sp);
                lib.writeU32(p + 4 * i, sp);
            });
            lib.writeU32(p + 4 * items.length, 0);
            return p;
        };
        const model = new Model();
        const layout = new Layout();
        const imp = new Importer();
        try {
            const argvP = array(args);
            const envP = env ? array(env) : 0;
            imp.check(c.mem4d_import_megatron(imp, args.length, argvP, envP, BigInt(opts.worldSize || 0), model, layout));
            return { model, layout, warnings: imp.warnings, worldSource: imp.worldSource };
        } catch (e) {
            model.free();
            layout.free();
            throw e;
        } finally {
            owned.forEach((p) => lib.free(p));
            imp.free();
        }
    }

    function solve(f, model, layout, device) {
        return out((p) => lib.check(f(model, layout, device, p)));
    }

    /** [gpus, Layout] for the fewest GPUs (up to maxGpus) on which some layout fits; [0n, null] if none. */
    function minGpus(model, device, base, maxGpus) {
        const layout = new Layout();
        const gpus = out((p) => lib.check(c.mem4d_solve_min_gpus(model, device, base, BigInt(maxGpus), p, layout)));
        if (gpus) return [gpus, layout];
        layout.free();
        return [0n, null];
    }

    Object.assign(lib, {
        Model, Layout, Device, Importer, ReportBuffer, Search, Mem4dError,
        estimate, plan, importMegatron,
        maxMicroBatch: (m, l, d) => solve(c.mem4d_solve_max_micro_batch, m, l, d),
        maxSeqLength: (m, l, d) => solve(c.mem4d_solve_max_seq_length, m, l, d),
        minGpus,
        version: c.mem4d_version(),
        TERMS, INFOS, METRICS, STATS, OPTIONS, SEARCHED,
        strerror: (s) => c.mem4d_strerror(s),
        STATUS,
    });
}
