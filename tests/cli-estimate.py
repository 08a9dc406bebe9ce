#!/usr/bin/env python3
"""`mem4d estimate`: the table, the JSON keys and values, and exit status 2
with one line on stderr for every kind of bad input. Usage: cli-estimate.py MEM4D"""
import json
import os
import subprocess
import sys
import tempfile
import unittest
import xml.dom.minidom

MEM4D = None
GOLDEN = ['--model', 'llama3.1-8b', '--gpu', 'h100-80', '--tp', '2', '--cp', '1', '--pp', '1',
          '--world', '4', '--mbs', '1', '--seq', '8192', '--mode', 'paper']


DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data')


def run(*args, stdout=subprocess.PIPE):
    return subprocess.run([MEM4D, *args], stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=30)


def one_error_line(test, p, needle, status=2):
    """Exit status 2, nothing on stdout, one 'mem4d: ' line naming the fault."""
    test.assertEqual(p.returncode, status, (p.stdout or '') + p.stderr)
    test.assertFalse(p.stdout, p.stdout)
    lines = p.stderr.strip().splitlines()
    test.assertEqual(len(lines), 1, p.stderr)
    test.assertTrue(lines[0].startswith('mem4d: '), p.stderr)
    test.assertIn(needle, p.stderr)


class Estimate(unittest.TestCase):
    def test_json_golden(self):
        p = run('estimate', *GOLDEN, '--json')
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(p.stdout)
        for key in ('mode', 'verdict', 'device_bytes', 'peak_bytes', 'peak_stage', 'stages'):
            self.assertIn(key, doc)
        self.assertEqual(doc['mode'], 'paper')
        self.assertEqual(doc['device_bytes'], 80 << 30)
        st = doc['stages'][0]
        for key in ('stage', 'weights_bytes', 'gradients_bytes', 'optimizer_bytes',
                    'activations_bytes', 'overhead_bytes', 'total_bytes'):
            self.assertIn(key, st)
        wo = st['weights_bytes'] + st['gradients_bytes'] + st['optimizer_bytes']
        self.assertAlmostEqual(wo / 2**30, 44.87260437011719, delta=1e-9)
        self.assertAlmostEqual(st['activations_bytes'] / 2**30, 22.64453125, delta=1e-9)
        self.assertEqual(doc['peak_bytes'], st['total_bytes'])
        self.assertEqual(doc['verdict'], 'tight')  # 67.5 GiB of 80

    def test_speed_band_stops_at_the_work_run_not_mfu(self):
        # Gemma 3 1B at 32k: its sliding window runs 512 keys while MFU counts
        # every earlier key, so MFU reads 101.9% of the peak with the kernels'
        # work at 43.9%. The band's fast end stopped at MFU 1 (tokens/s high
        # equal to the point) and warned of a run past the peak; neither holds.
        p = run('estimate', '--hf-config', os.path.join(DATA, 'hf', 'recent', 'gemma-3-1b-it.json'), '--world', '8',
                '--mbs', '1', '--seq', '32768', '--gbs', '64', '--json')
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(p.stdout)
        speed = doc['speed']
        self.assertGreater(speed['mfu'], 1)
        self.assertGreater(speed['tokens_per_s_high'], 1.05 * speed['tokens_per_s'])
        self.assertGreater(speed['mfu_high'], speed['mfu'])
        self.assertFalse([w for w in doc['warnings'] if 'above the peak' in w], doc['warnings'])
        self.assertTrue([w for w in doc['warnings'] if w.startswith("speed: MFU 101.9% is Megatron's count")],
                        doc['warnings'])

    def test_local_attention_says_chunked_or_sliding(self):
        # Llama 4 Scout: chunks of 8192 tokens on its 36 RoPE layers of 48
        # (CHUNKED_ATTN). The text and --json said nothing of the chunk, and
        # the step charged every layer full attention; under torchtitan
        # (FlexAttention) the chunks are timed, under Megatron (no chunked
        # attention) timed full, at 8192 tokens there is nothing to say.
        scout = ['--hf-config', os.path.join(DATA, 'hf', 'recent', 'llama-4-scout-17b-16e-instruct.json'),
                 '--world', '64', '--mbs', '1', '--gbs', '64']

        def local(*extra):
            p = run('estimate', *scout, *extra, '--json')
            self.assertEqual(p.returncode, 0, p.stderr)
            text = run('estimate', *scout, *extra)
            self.assertEqual(text.returncode, 0, text.stderr)
            line = [ln for ln in text.stdout.splitlines() if ln.startswith('attention: ')]
            return json.loads(p.stdout)['local_attention'], line[0]
        doc, line = local('--seq', '32768', '--framework', 'torchtitan')
        self.assertEqual(doc, {'kind': 'chunked', 'tokens': 8192, 'window_layers': 36, 'window_timed_full': False})
        self.assertTrue(line.endswith('; chunked attention, chunks of 8192 tokens, on 36 of 48 layers'), line)
        doc, line = local('--seq', '32768')
        self.assertEqual(doc['window_timed_full'], True)
        self.assertTrue(line.endswith('on 36 of 48 layers, timed as full attention'), line)
        self.assertNotIn('sliding', line)
        self.assertEqual(local('--seq', '8192', '--framework', 'torchtitan')[0], None)
        p = run('estimate', '--hf-config', os.path.join(DATA, 'hf', 'recent', 'gemma-3-1b-it.json'), '--world', '8',
                '--mbs', '1', '--seq', '32768', '--gbs', '64', '--json')
        self.assertEqual(json.loads(p.stdout)['local_attention'],
                         {'kind': 'sliding', 'tokens': 512, 'window_layers': 22, 'window_timed_full': False})

    def test_full_mode_every_stage(self):
        p = run('estimate', '--model=llama3.1-70b', '--gpu=h100-80', '--tp=8', '--pp=4', '--dp=2',
                '--seq=8192', '--gbs=64', '--json')
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(p.stdout)
        self.assertEqual(doc['mode'], 'full')
        self.assertEqual([s['stage'] for s in doc['stages']], [0, 1, 2, 3])
        self.assertEqual(doc['peak_bytes'], max(s['total_bytes'] for s in doc['stages']))

    def test_json_every_term_moment_and_model_size(self):
        # Every per-stage term (the parts of overhead too), the moment each stage
        # peaks at, and the model's parameter count.
        p = run('estimate', '--model=llama3.1-8b', '--tp=1', '--pp=4', '--dp=2', '--seq=512', '--gbs=64',
                '--json')
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(p.stdout)
        self.assertEqual(doc['model_params'], 8030261248)  # Llama 3.1 8B, vocabulary 128256
        for st in doc['stages']:
            for key in ('buffers_bytes', 'fragmentation_bytes', 'fixed_bytes', 'peak_allocated_bytes',
                        'peak_reserved_bytes'):
                self.assertIn(key, st)
            self.assertEqual(st['overhead_bytes'],
                             st['buffers_bytes'] + st['fragmentation_bytes'] + st['fixed_bytes'])
            self.assertEqual(st['peak_reserved_bytes'], st['peak_allocated_bytes'] + st['fragmentation_bytes'])
        # A short sequence: the first stage peaks while forming the embedding's
        # gradient, the others in the forward/backward.
        self.assertEqual([s['peak_moment'] for s in doc['stages']],
                         ['embedding_grad', 'forward_backward', 'forward_backward', 'forward_backward'])
        # bf16 gradients and no distributed optimizer: the step's fp32 gradient copy wins.
        p = run('estimate', '--model=llama3.1-8b', '--tp=1', '--pp=1', '--dp=8', '--seq=256',
                '--set', 'main_grad_bytes=2', '--json')
        self.assertEqual(json.loads(p.stdout)['stages'][0]['peak_moment'], 'optimizer_step')
        # Paper mode has one moment.
        self.assertEqual(json.loads(run('estimate', *GOLDEN, '--json').stdout)['stages'][0]['peak_moment'],
                         'forward_backward')

    def test_table_names_the_moments_and_model_size(self):
        p = run('estimate', '--model=llama3.1-8b', '--tp=1', '--pp=4', '--dp=2', '--seq=512', '--gbs=64')
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('model: 8030261248 parameters (8.03 B). stages peak at: stage 0 embedding_grad, '
                      'stages 1-3 forward_backward\n', p.stdout)

    def test_model_set_any_model_key(self):
        # --model-set applies over the preset (and over --hf-config), by the key's name.
        def params(*extra):
            p = run('estimate', '--model=llama3.1-8b', '--tp=2', '--world=4', '--seq=8192', *extra, '--json')
            self.assertEqual(p.returncode, 0, p.stderr)
            return json.loads(p.stdout)['model_params']
        full = params()
        half = params('--model-set', 'num_layers=16')
        layer = (full - half) // 16
        self.assertEqual(full - half, 16 * layer)
        self.assertEqual(layer, 218112000)  # attention 41943040 + SwiGLU 3·4096·14336 + two norms 8192
        cfg = os.path.join(DATA, 'hf', 'llama3.1-8b.json')
        p = run('estimate', '--hf-config', cfg, '--model-set', 'num_layers=16', '--tp=2', '--world=4',
                '--seq=8192', '--json')
        self.assertEqual(json.loads(p.stdout)['model_params'], half)
        for extra, needle in [(['--model-set', 'bogus=1'], "--model-set: unknown model key 'bogus'"),
                              (['--model-set', 'num_layers=0'], 'num_layers 0 is out of range'),
                              (['--model-set', 'hidden_size=0x10'], '--model-set hidden_size needs a decimal'),
                              (['--model-set', 'num_layers'], '--model-set needs KEY=VALUE')]:
            with self.subTest(extra=extra):
                one_error_line(self, run('estimate', *GOLDEN, *extra), needle)

    def test_table(self):
        p = run('estimate', *GOLDEN)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('llama3.1-8b on h100-80, tp 2 cp 1 pp 1 dp 2', p.stdout)
        self.assertIn('67.52', p.stdout)
        self.assertIn('tight', p.stdout)

    def test_speed_band_and_mfu_peak(self):
        """Every speed figure with its band; MFU against the job's precision's peak, named."""
        job = ['--model', 'llama3.1-8b', '--gpu', 'h100-80', '--world', '8', '--seq', '8192', '--gbs', '128']
        p = run('estimate', *job, '--json')
        self.assertEqual(p.returncode, 0, p.stderr)
        sp = json.loads(p.stdout)['speed']
        for x in ('step_time_s', 'tokens_per_s', 'tflops_per_gpu', 'mfu'):
            lo, hi = x.replace('_s', '_low_s') if x == 'step_time_s' else x + '_low', \
                x.replace('_s', '_high_s') if x == 'step_time_s' else x + '_high'
            self.assertLess(sp[lo], sp[x])
            self.assertGreater(sp[hi], sp[x])
        self.assertEqual(sp['mfu_peak'], 'bf16')
        self.assertEqual(sp['mfu_peak_flops'], 989.4e12)
        fp8 = json.loads(run('estimate', *job, '--set', 'fp8=1', '--json').stdout)['speed']
        self.assertEqual(fp8['mfu_peak'], 'fp8')
        self.assertEqual(fp8['mfu_peak_flops'], 1978.9e12)
        self.assertAlmostEqual(fp8['mfu'], fp8['tflops_per_gpu'] * 1e12 / 1978.9e12, places=7)
        # NVFP4 takes the fp4 peak (GB300: 15 PFLOP/s dense), and is refused where there is none.
        fp4 = ['--model', 'llama3.1-8b', '--gpu', 'gb300-288', '--world', '8', '--seq', '8192', '--gbs', '128',
               '--set', 'fp8=1', '--set', 'fp8_recipe=nvfp4']
        sp4 = json.loads(run('estimate', *fp4, '--json').stdout)['speed']
        self.assertEqual((sp4['mfu_peak'], sp4['mfu_peak_flops']), ('fp4', 15000e12))
        self.assertAlmostEqual(sp4['mfu'], sp4['tflops_per_gpu'] * 1e12 / 15000e12, places=7)
        self.assertIn('of the fp4 peak 15000 TFLOP/s', run('estimate', *fp4).stdout)
        p = run('estimate', *job, '--set', 'fp8=1', '--set', 'fp8_recipe=nvfp4')
        self.assertNotEqual(p.returncode, 0)
        self.assertIn('needs fp4 tensor cores', p.stderr)
        # The name is the job's precision, not a comparison of peaks: on a
        # device whose fp8 peak equals its bf16 one a bf16 job was "fp8".
        same = job + ['--device-set', 'peak_fp8_flops=989400000000000']
        for extra, name in (([], 'bf16'), (['--set', 'fp8=1'], 'fp8')):
            sp_same = json.loads(run('estimate', *same, *extra, '--json').stdout)['speed']
            self.assertEqual((sp_same['mfu_peak'], sp_same['mfu_peak_flops']), (name, 989.4e12), extra)
            self.assertIn('of the %s peak 989 TFLOP/s' % name, run('estimate', *same, *extra).stdout)
        text = run('estimate', *job).stdout
        self.assertIn('%.0f tokens/s (%.0f-%.0f;' % (sp['tokens_per_s'], sp['tokens_per_s_low'],
                                                     sp['tokens_per_s_high']), text)
        self.assertIn('of the bf16 peak 989 TFLOP/s', text)
        # A calibrated device narrows the band (its ratio high/low).
        cal = json.loads(run('estimate', *job, '--device-set', 'calibrated_runs=1', '--json').stdout)['speed']
        self.assertEqual(cal['tokens_per_s'], sp['tokens_per_s'])
        self.assertGreater(cal['tokens_per_s_low'], sp['tokens_per_s_low'])
        self.assertLess(cal['tokens_per_s_high'] / cal['tokens_per_s_low'],
                        sp['tokens_per_s_high'] / sp['tokens_per_s_low'])

    def test_gpu_memory_override(self):
        p = run('estimate', *GOLDEN, '--gpu-memory-gib', '200', '--json')
        self.assertEqual(json.loads(p.stdout)['verdict'], 'fits')
        self.assertEqual(json.loads(p.stdout)['device_bytes'], 200 << 30)

    def test_bad_input_exits_2_with_one_line(self):
        cases = [
            (['--model', 'gpt-9'], 'unknown model'),
            (['--gpu', 'tpu'], 'unknown gpu'),
            (['--tp', 'eight'], '--tp'),
            (['--tp', '-2'], '--tp'),
            (['--tp', '0'], 'out of range'),
            (['--tp', '3'], 'not divisible by tp 3'),
            (['--mode', 'exact'], '--mode'),
            (['--gpu-memory-gib', '-1'], '--gpu-memory-gib'),
            (['--frobnicate'], 'unknown option'),
            (['--seq'], '--seq'),
            (['--world', '5'], 'world size 5'),
            (['--set', 'nonsense=1'], 'unknown layout key'),
            # Decimal only: the library also reads 0x hex, a command line should not.
            (['--seq', '0x1000'], "--seq needs a decimal number, got '0x1000'"),
            (['--set', 'seq=0x1000'], "--set seq needs a decimal number"),
            # Below a MiB is a unit mix-up, not a GPU.
            (['--gpu-memory-gib', '0.0000001'], '--gpu-memory-gib needs a size in GiB'),
            (['--gpu-memory-gib', '0x50'], '--gpu-memory-gib'),
            (['--gpu-memory-gib', '1e3'], '--gpu-memory-gib'),
            (['--gpu-memory-gib', ''], '--gpu-memory-gib needs a value'),
            (['--hf-config', os.path.join(DATA, 'hf', 'llama3.1-8b.json')],
             '--model and --hf-config contradict each other'),
            (['--json=yes'], '--json takes no value'),
            # In the key's range but not a value it takes (2 or 4).
            (['--set', 'main_grad_bytes=3'], '--set main_grad_bytes 3 is not a value this key takes'),
            # issue 24, items 9 and 14: explicit zeros that would mean "not set",
            # bounds stated, the flag named as given
            (['--dp', '0'], '--dp must be at least 1, got 0'),
            (['--model-set', 'num_query_groups=0'], '--model-set num_query_groups=0 would mean "not set"'),
            (['--model-set', 'kv_channels=0'], '--model-set kv_channels=0 would mean "not set"'),
            (['--model-set', 'num_layers=-8'], "--model-set num_layers: '-8' is not a whole number from 1 to 4096"),
            (['--device-set', 'gpus_per_node=-8'],
             "--device-set gpus_per_node: '-8' is not a whole number from 1 to 1024"),
            (['--recompute', 'maybe'], "--recompute: 'maybe' is not one of none, selective, full, op"),
            (['--dist-opt', 'maybe'], "--dist-opt: 'maybe' is not true or false"),
        ]
        for extra, needle in cases:
            with self.subTest(extra=extra):
                one_error_line(self, run('estimate', *GOLDEN, *extra), needle)

    def test_bandwidth_zero_is_unknown_not_free(self):
        # issue 24, item 9: a link of bandwidth 0 left the step time without
        # its communication, silently.
        p = run('estimate', '--model', 'llama3.1-8b', '--tp', '2', '--world', '4', '--seq', '4096', '--mbs', '1',
                '--device-set', 'intra_node_bandwidth=0')
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('warning: intra_node_bandwidth is 0 (unknown): the step time leaves out', p.stdout)

    def test_fp8_without_an_fp8_peak_is_said(self):
        # An fp8 job on a GPU without an fp8 peak (A100) was estimated
        # silently: fp8's caches and casts counted, its GEMMs at the bf16
        # rate, MFU of the bf16 peak, for a job Transformer Engine refuses.
        job = ['--model', 'llama3.1-8b', '--tp', '2', '--world', '8', '--seq', '4096', '--mbs', '1', '--gbs', '64',
               '--set', 'fp8=1']
        p = run('estimate', *job, '--gpu', 'a100-80')
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('warning: fp8: the device has no fp8 peak (peak_fp8_flops 0;', p.stdout)
        self.assertIn('of the bf16 peak', p.stdout)
        p = run('estimate', *job, '--gpu', 'h100-80')
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn('no fp8 peak', p.stdout)
        self.assertIn('of the fp8 peak', p.stdout)
        # MXFP8 needs Blackwell's tensor cores (Transformer Engine's
        # check_mxfp8_support: compute capability 10.0): on an H100 or an
        # MI300X it was estimated without a word; on a B200 it runs.
        mx = job + ['--set', 'fp8_recipe=mxfp8']
        for gpu, said in (('h100-80', True), ('mi300x-192', True), ('b200-180', False), ('gb200-186', False)):
            p = run('estimate', *mx, '--gpu', gpu)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual('warning: fp8_recipe mxfp8: Transformer Engine runs MXFP8 on compute capability 10.0'
                             in p.stdout, said, gpu)
        self.assertNotIn('fp8_recipe mxfp8', run('estimate', *job, '--gpu', 'h100-80', '--set',
                                                 'fp8_recipe=blockwise').stdout)

    def test_framework_help_names_the_speed_profile(self):
        # --framework's help called it "the training stack", but the stack
        # whose kernels set the speed is the device key stack: --framework
        # torchtitan alone ran the middle profile (75046 tokens/s for
        # llama3.1-8b on 8 H100 against 64275 with --device-set
        # stack=torchtitan).
        for cmd in ('estimate', 'plan', 'calibrate'):
            p = run(cmd, '--help')
            self.assertEqual(p.returncode, 0, p.stderr)
            line = p.stdout[p.stdout.index('\n  --framework'):]
            line = line[:line.index('\n  --', 2)]
            self.assertIn('--device-set stack=', line, cmd)
        p = run('estimate', '--help')
        self.assertNotIn('selects another training stack', p.stdout)

    def test_no_speed_says_why(self):
        # Without --gbs, or on a device without peak_flops, the speed line
        # was left out in silence; plan's header still said "Fastest first"
        # over rows of dashes ordered by memory.
        job = ['--model', 'llama3.1-8b', '--tp', '2', '--world', '8', '--seq', '4096', '--mbs', '1']
        p = run('estimate', *job)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('speed: not predicted: give --gbs', p.stdout)
        p = run('estimate', *job, '--gbs', '64', '--device-set', 'peak_flops=0')
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('speed: not predicted: the device has no peak_flops', p.stdout)
        p = run('estimate', *job, '--gbs', '64')
        self.assertNotIn('not predicted', p.stdout)
        p = run('plan', '--model', 'llama3.1-8b', '--gpus', '8', '--seq', '4096', '--device-set', 'peak_flops=0')
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn('Fastest first', p.stdout)
        self.assertIn('Least memory first (no step time: the device has no peak_flops)', p.stdout)

    def test_key_of_another_table_names_its_flag(self):
        # The users set the stack "through --device-set/--set": --set
        # stack=torchtitan said only "unknown layout key 'stack'".
        job = ['--model', 'llama3.1-8b', '--world', '8', '--seq', '4096', '--mbs', '1', '--gbs', '64']
        for extra, needle in ((['--set', 'stack=torchtitan'],
                               "--set: unknown layout key 'stack': a device key, --device-set stack=torchtitan"),
                              (['--device-set', 'tp=2'], "--device-set: unknown device key 'tp': a layout key, "
                               "--set tp=2"),
                              (['--set', 'num_layers=40'], "a model key, --model-set num_layers=40"),
                              (['--model-set', 'warp=1'], "--model-set: unknown model key 'warp'")):
            one_error_line(self, run('estimate', *job, *extra), needle)

    def test_softmax_attention_job_is_timed_as_one(self):
        # A job without fused attention (flash_attn 0: Megatron-LM's
        # --attention-backend unfused or local) kept no s x s scores in the
        # step time: its memory was softmax attention's (3x the flash job's
        # peak) and its speed the stack's flash kernel's, the same 7.064 s.
        # And one that leaves flash_attn unset on megatron-deepspeed (softmax
        # attention) was timed as softmax attention with flash attention's
        # memory (61 GB peak against 282 GB). One owner decides both now
        # (m4d_attention_fused()): flash_attn where set, else the device's
        # kernel, else its stack's.
        job = ['--model', 'llama3.1-8b', '--tp', '2', '--world', '8', '--seq', '8192', '--mbs', '1', '--gbs', '64',
               '--json']

        def peak_and_step(*extra):
            p = run('estimate', *job, *extra)
            self.assertEqual(p.returncode, 0, p.stderr)
            out = json.loads(p.stdout)
            return out['peak_bytes'], out['speed']['step_time_s']
        flash, softmax = peak_and_step(), peak_and_step('--set', 'flash_attn=0')
        self.assertGreater(softmax[1], 1.2 * flash[1])
        self.assertEqual(softmax, peak_and_step('--set', 'flash_attn=0', '--device-set', 'attention_kernel=unfused'))
        self.assertEqual(softmax, peak_and_step('--device-set', 'attention_kernel=unfused'))
        # flash_attn set is the job's word over the device's kernel
        self.assertEqual(softmax, peak_and_step('--set', 'flash_attn=0', '--device-set', 'attention_kernel=fa3'))
        ds = ('--device-set', 'stack=megatron-deepspeed')
        unset = peak_and_step(*ds)
        self.assertEqual(unset, peak_and_step('--set', 'flash_attn=0', *ds))
        self.assertGreater(unset[0], 2 * flash[0])
        # flash_attn 1 set runs flash attention on that stack: the default stack's memory, a shorter step
        fused = peak_and_step('--set', 'flash_attn=1', *ds)
        self.assertEqual(fused[0], flash[0])
        self.assertLess(fused[1], unset[1])
        # paper mode (the paper's formula, flash attention's) refuses softmax attention from the stack as from the key
        one_error_line(self, run('estimate', *job, '--set', 'mode=paper', *ds), 'paper mode does not model softmax')
        self.assertEqual(run('estimate', *job, '--set', 'mode=paper', '--set', 'flash_attn=1', *ds).returncode, 0)

    def test_report_says_which_attention_ran(self):
        # Which attention a job runs was decided (the layout's flash_attn where
        # set, else the device's kernel, else its stack's; the stack's fused
        # softmax declining a shape) but not shown: a layout leaving flash_attn
        # unset reads 1 on megatron-deepspeed, which runs softmax attention.
        # The text and --json now say the kernel and the softmax that ran.
        job = ['--model', 'llama3.1-8b', '--gpu', 'h100-80', '--tp', '2', '--world', '8', '--mbs', '1',
               '--gbs', '64']

        def attention(*extra):
            p = run('estimate', *job, *extra, '--json')
            self.assertEqual(p.returncode, 0, p.stderr)
            doc = json.loads(p.stdout)
            text = run('estimate', *job, *extra)
            self.assertEqual(text.returncode, 0, text.stderr)
            line = [ln for ln in text.stdout.splitlines() if ln.startswith('attention: ')]
            self.assertEqual(len(line), 1, text.stdout)
            return doc['attention_kernel'], doc['softmax_fallback'], line[0]
        kernel, fallback, line = attention('--seq', '8192')  # the default stack's kernel, cuDNN's
        self.assertEqual((kernel, fallback), ('cudnn', False))
        self.assertIn('fused (flash) attention, kernel cudnn', line)
        self.assertEqual(attention('--seq', '8192', '--device-set', 'attention_kernel=fa3')[:2], ('fa3', False))
        self.assertEqual(attention('--seq', '8192', '--gpu', 'a100-80', '--device-set', 'attention_kernel=fa3')[:2],
                         ('fa2', False))  # no FlashAttention-3 on an A100
        ds = ('--device-set', 'stack=megatron-deepspeed')
        kernel, fallback, line = attention('--seq', '2048', *ds)
        self.assertEqual((kernel, fallback), ('unfused', False))
        self.assertIn("softmax attention over the s x s scores (kernel unfused), the stack's fused softmax", line)
        kernel, fallback, line = attention('--seq', '4096', *ds)  # beyond its fused softmax's 2048 keys
        self.assertEqual((kernel, fallback), ('unfused', True))
        self.assertIn("PyTorch's fp32 softmax runs", line)
        self.assertEqual(attention('--seq', '2048', '--set', 'flash_attn=1', *ds)[:2], ('fa2', False))
        # BigScience's fork of 2022-02 tests the heads a rank (8 at tp 4): micro-batch 1 falls back, 4 does not
        bs = ('--tp', '4', '--seq', '2048', '--device-set', 'stack=megatron-deepspeed-bigscience-2022-02')
        kernel, fallback, line = attention(*bs)
        self.assertEqual((kernel, fallback), ('unfused', True))
        self.assertIn('declines sequence 2048, micro-batch 1, 8 heads per rank', line)
        self.assertEqual(attention(*bs, '--mbs', '4')[:2], ('unfused', False))

    def test_float8_job_timed_in_bf16_is_said(self):
        # torchtitan's float8 (torchao) changes no memory, and the step time
        # has no float8 GEMMs: a float8 job printed the bf16 job's step and
        # "MFU 54.9% of the bf16 peak" with no word.
        job = ['--model', 'llama3.1-8b', '--world', '8', '--seq', '8192', '--mbs', '1', '--gbs', '64',
               '--framework', 'torchtitan']
        p = run('estimate', *job, '--set', 'float8=1')
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('warning: float8: the step time runs the linear GEMMs in bf16', p.stdout)
        self.assertNotIn('float8:', run('estimate', *job).stdout)

    def test_subcommands_without_options_refuse_them(self):
        for cmd in ('presets', 'version'):
            with self.subTest(cmd=cmd):
                one_error_line(self, run(cmd, '--foo'), "unknown option '--foo'")
                self.assertEqual(run(cmd).returncode, 0)

    def test_write_error_on_stdout_is_an_error(self):
        if not os.path.exists('/dev/full'):
            self.skipTest('no /dev/full')
        for fmt in ([], ['--json']):
            with open('/dev/full', 'w') as full, self.subTest(fmt=fmt):
                p = run('estimate', *GOLDEN, *fmt, stdout=full)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn('mem4d: cannot write the output', p.stderr)
        with open('/dev/full', 'w') as full:
            p = run('presets', stdout=full)
        self.assertEqual(p.returncode, 2, p.stderr)

    def test_config_that_is_not_a_regular_file_is_refused(self):
        # A FIFO with no writer would block the reader for ever.
        with tempfile.TemporaryDirectory() as tmp:
            fifo = os.path.join(tmp, 'config.json')
            os.mkfifo(fifo)
            p = run('estimate', '--hf-config', fifo, '--tp', '2', '--world', '4', '--seq', '8192')
            one_error_line(self, p, f"--hf-config: '{fifo}' is not a regular file")
        one_error_line(self, run('estimate', '--hf-config', tempfile.gettempdir(), '--world', '4', '--seq', '8'),
                       'is not a regular file')

    def test_import_warnings_reach_stderr(self):
        with open(os.path.join(DATA, 'hf', 'llama3.1-8b.json')) as f:
            doc = json.load(f)
        del doc['model_type']
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, 'config.json')
            with open(path, 'w') as f:
                json.dump(doc, f)
            p = run('estimate', '--hf-config', path, '--tp', '2', '--world', '4', '--seq', '8192')
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr, 'mem4d: warning: config.json has no "model_type"; read as a Llama-like model\n')
        self.assertNotIn('warning', p.stdout)

    def test_ds_config_sets_zero_and_batch_under_the_command_line(self):
        base = ['estimate', '--model', 'llama3.1-8b', '--dp', '8', '--seq', '4096', '--json']
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, 'ds_config.json')
            with open(path, 'w') as f:
                json.dump({'train_micro_batch_size_per_gpu': 2, 'bf16': {'enabled': True},
                           'zero_optimization': {'stage': 2, 'overlap_comm': True}}, f)
            plain = json.loads(run(*base, '--set', 'framework=deepspeed', '--set', 'zero_stage=0').stdout)
            p = run(*base, '--ds-config', path)
            self.assertEqual(p.returncode, 0, p.stderr)
            ds = json.loads(p.stdout)
            # ZeRO-2 shards the gradients over dp 8
            self.assertLess(ds['stages'][0]['gradients_bytes'], plain['stages'][0]['gradients_bytes'] / 4)
            # the file's micro-batch 2, unless --mbs says otherwise
            one = json.loads(run(*base, '--ds-config', path, '--mbs', '1').stdout)
            self.assertLess(one['stages'][0]['activations_bytes'], ds['stages'][0]['activations_bytes'])
            self.assertEqual(one['stages'][0]['optimizer_bytes'], ds['stages'][0]['optimizer_bytes'])
            with open(path, 'w') as f:
                json.dump({'zero_optimization': {'stage': 9}}, f)
            one_error_line(self, run(*base, '--ds-config', path), 'zero_optimization.stage')
            # what DeepSpeed itself refuses, with DeepSpeed's reason
            refused = [({'bf16': {'enabled': True}, 'fp16': {'enabled': True}}, [], 'simultaneously enabled'),
                       ({'train_batch_size': 256, 'train_micro_batch_size_per_gpu': 2,
                         'gradient_accumulation_steps': 4}, [], '256 is not train_micro_batch_size_per_gpu 2'),
                       ({'zero_optimization': {'stage': 2}}, ['--pp', '2'], 'incompatible with pipeline parallelism'),
                       ({'zero_optimization': {'stage': 3}}, ['--pp', '2'], 'incompatible with pipeline parallelism')]
            for doc, extra, says in refused:
                with open(path, 'w') as f:
                    json.dump(doc, f)
                one_error_line(self, run(*base, *extra, '--ds-config', path), says)
            # the same batch over dp 8 is DeepSpeed's 256 = 2 x 16 x 8; the micro-batch from the rest
            with open(path, 'w') as f:
                json.dump({'train_batch_size': 256, 'gradient_accumulation_steps': 16,
                           'zero_optimization': {'stage': 1}}, f)
            p = run(*base, '--pp', '2', '--ds-config', path)
            self.assertEqual(p.returncode, 0, p.stderr)
            same = run(*base, '--pp', '2', '--mbs', '2', '--gbs', '256', '--set', 'framework=deepspeed',
                       '--set', 'zero_stage=1', '--set', 'param_bytes=4', '--set', 'overlap_grad_reduce=0')
            self.assertEqual(json.loads(p.stdout)['stages'], json.loads(same.stdout)['stages'])
        one_error_line(self, run(*base, '--ds-config', '/nonexistent/ds.json'), '--ds-config')

    def test_torchtitan_config_on_estimate_plan_and_check(self):
        """The library's torchtitan reader behind --torchtitan-config (issue 24):
        the file's layout is the command line's, bad files are one line."""
        job = os.path.join(DATA, 'torchtitan', 'llama4_17bx128e-2026.toml')  # tp 8, pp 4, full AC
        base = ['--model', 'llama3.1-70b', '--world', '256', '--json']
        p = run('estimate', *base, '--torchtitan-config', job)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr, '')
        same = run('estimate', *base, '--tp', '8', '--pp', '4', '--mbs', '1', '--gbs', '8', '--seq', '8192',
                   '--recompute', 'full', '--set', 'framework=torchtitan', '--set', 'stage_layers=20,21,20,19')
        self.assertEqual(json.loads(p.stdout)['stages'], json.loads(same.stdout)['stages'])
        # a flag given wins; a pp of its own replaces the file's pipeline split, with a warning
        p = run('estimate', *base, '--torchtitan-config', job, '--pp', '8')
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('split evenly', p.stderr)
        self.assertEqual(len(json.loads(p.stdout)['stages']), 8)
        # The file's batch is its reader's for the file's degrees (gbs 8 = local_batch_size 1 x dp 8):
        # at pp 8 dp is 4, where torchtitan would run 4; the kept batch is said, not silent (it
        # was: 2 micro-batches per replica where torchtitan runs 1). --gbs and --mbs given, no word.
        self.assertIn('global batch 8 and micro-batch 1 are the file\'s for its dp 8 and pp 4, kept at dp 4 and '
                      'pp 8', p.stderr)
        p = run('estimate', *base, '--torchtitan-config', job, '--pp', '8', '--gbs', '4', '--mbs', '1')
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn('global batch', p.stderr)
        self.assertNotIn('global batch', run('estimate', *base, '--torchtitan-config', job, '--tp', '8').stderr)
        p = run('plan', '--model', 'llama3.1-70b', '--gpus', '256', '--torchtitan-config', job, '--top', '3', '--json')
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(json.loads(p.stdout))
        p = run('check', '--model', 'llama3.1-70b', '--world-size', '256', '--torchtitan-config', job)
        self.assertIn(p.returncode, (0, 1), p.stderr)
        self.assertIn('world size 256 (from --world-size)', p.stdout)
        one_error_line(self, run('check', '--world-size', '8', '--torchtitan-config', job), 'needs the model')
        with tempfile.TemporaryDirectory() as d:
            bad = os.path.join(d, 'job.toml')
            for text, says in (('[compile]\nenable = "no"\n', 'compile.enable is a string, not true or false'),
                               ('[parallelism]\ntensor_parallel_degree = 8\n[parallelism]\n', 'line 3'),
                               ('[parallelism]\npipeline_parallel_degree = 4\n'
                                'pipeline_parallel_schedule = "Zigzag"\n', 'not one of 1F1B'),
                               ('[parallelism]\ndata_parallel_shard_degree = 3\n', 'not the world size 256')):
                with open(bad, 'w') as f:
                    f.write(text)
                one_error_line(self, run('estimate', *base, '--torchtitan-config', bad), '--torchtitan-config')
                self.assertIn(says, run('estimate', *base, '--torchtitan-config', bad).stderr)
            fifo = os.path.join(d, 'fifo.toml')
            os.mkfifo(fifo)
            for path in (fifo, '/dev/zero', d):
                one_error_line(self, run('estimate', *base, '--torchtitan-config', path), 'not a regular file')

    def test_control_bytes_in_names_and_messages_are_escaped(self):
        """A GPU name, a path or a flag with terminal escapes, C1 controls,
        a right-to-left override or bytes that are not UTF-8 (issue 24): the
        table, JSON, CSV, SVG and stderr carry them as \\xNN / \\uNNNN text,
        so JSON and SVG stay valid and no terminal escape gets through."""
        evil = b'evil\x1b[31mRED\xc2\x9b\xff\xe2\x80\xae<&>"'
        raw = (b'\x1b', b'\xc2\x9b', b'\xff', b'\xe2\x80\xae')

        def brun(*args):
            return subprocess.run([MEM4D.encode(), *[a if isinstance(a, bytes) else a.encode() for a in args]],
                                  capture_output=True, timeout=60)

        def clean(test, data, what):
            for r in raw:
                test.assertNotIn(r, data, what)
            data.decode('utf-8')  # strict: every byte UTF-8

        with tempfile.TemporaryDirectory() as d:
            dev = os.path.join(d, 'gpu.txt')
            with open(dev, 'wb') as f:
                f.write(b'preset = h100-80\nname = ' + evil + b'\n')
            job = ['--model', 'llama3.1-8b', '--seq', '4096', '--device-file', dev]
            p = brun('estimate', *job, '--world', '8')
            self.assertEqual(p.returncode, 0, p.stderr)
            clean(self, p.stdout, 'estimate table')
            self.assertIn(b'evil\\x1b[31mRED\\u009b\\xff\\u202e<&>', p.stdout)
            svg = os.path.join(d, 'plan.svg')
            p = brun('plan', *job, '--gpus', '8', '--gbs', '64', '--top', '2', '--svg', svg)
            self.assertEqual(p.returncode, 0, p.stderr)
            clean(self, p.stdout, 'plan table')
            with open(svg, 'rb') as f:
                clean(self, f.read(), 'svg')
            title = xml.dom.minidom.parse(svg).getElementsByTagName('text')[0].firstChild.data
            self.assertIn('evil\\x1b[31mRED', title)
            p = brun('plan', *job, '--gpus', '8', '--gbs', '64', '--csv')
            clean(self, p.stdout, 'plan csv')
            # JSON with the library's warnings quoting a flag; stderr the same
            args = ['--num-layers', '32', '--hidden-size', '4096', '--num-attention-heads', '32', '--seq-length',
                    '4096', '--max-position-embeddings', '4096', '--vocab-size', '32000', '--micro-batch-size', '1',
                    b'--frob' + evil]
            p = brun('check', '--world-size', '8', '--json', '--', *args)
            self.assertIn(p.returncode, (0, 1), p.stderr)
            clean(self, p.stdout, 'check json')
            clean(self, p.stderr, 'check warnings')
            doc = json.loads(p.stdout.decode())
            self.assertTrue(any('\\x1b[31m' in w for w in doc['warnings']), doc['warnings'])
            # an error quoting a path
            p = brun('estimate', '--model', 'llama3.1-8b', '--world', '8', '--seq', '4096', '--device-file',
                     os.path.join(d.encode(), evil))
            self.assertEqual(p.returncode, 2)
            clean(self, p.stderr, 'error')
            self.assertEqual(p.stderr.count(b'\n'), 1, p.stderr)

    def test_paper_mode_refusal_is_explained(self):
        p = run('estimate', *GOLDEN, '--vpp', '2', '--pp', '2')
        self.assertEqual(p.returncode, 2)
        self.assertIn('paper mode does not model vpp 2', p.stderr)


if __name__ == '__main__':
    MEM4D = sys.argv.pop(1)
    unittest.main(verbosity=1)
