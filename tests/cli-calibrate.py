#!/usr/bin/env python3
"""`mem4d calibrate`: fits the device to the logs in data/megatron-logs, the
fitted step matches the measured one, --output writes a device file that
estimate, plan and check take with --device-file, and a log it cannot read is
one line on stderr naming the line, exit status 2.
Usage: cli-calibrate.py MEM4D DATA_DIR"""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

MEM4D = None
DATA = None


def run(*args):
    return subprocess.run([MEM4D, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)


class Calibrate(unittest.TestCase):
    def test_fit_and_device_file(self):
        log = os.path.join(DATA, 'llama31-8b-cp2-16gpu.log')
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, 'fitted.device')
            p = run('calibrate', '--log', log, '--output', out, '--json')
            self.assertEqual(p.returncode, 0, p.stderr)
            doc = json.loads(p.stdout)
            entry = doc['logs'][0]
            self.assertEqual(entry['log'], 'llama31-8b-cp2-16gpu.log')
            self.assertAlmostEqual(entry['predicted_step_after_s'] / entry['measured_step_s'], 1, delta=0.005)
            with open(out) as f:
                text = f.read()
            self.assertIn('matmul_efficiency_ppm = %d' % doc['device']['matmul_efficiency_ppm'], text)
            job = ['--model', 'llama3.1-8b', '--cp', '2', '--world', '16', '--seq', '8192', '--gbs', '256']
            p = run('estimate', *job, '--device-file', out)
            self.assertEqual(p.returncode, 0, p.stderr)
            p = run('plan', '--model', 'llama3.1-8b', '--gpus', '16', '--seq', '8192', '--gbs', '256',
                    '--device-file', out, '--json')
            self.assertEqual(p.returncode, 0, p.stderr)

    def test_json_bytes_are_whole(self):
        """The memory figures are whole bytes, as estimate --json prints them: %.9g rounded
        the log's 12003.60 MB (12586686873.6 bytes) to 12586686900.0."""
        p = run('calibrate', '--log', os.path.join(DATA, 'llama32-1b-dp8.log'), '--json')
        self.assertEqual(p.returncode, 0, p.stderr)
        entry = json.loads(p.stdout)['logs'][0]
        for k in ('measured_max_allocated', 'predicted_max_allocated_before', 'predicted_max_allocated_after',
                  'measured_max_reserved', 'predicted_max_reserved_before', 'predicted_max_reserved_after'):
            self.assertIs(type(entry[k]), int, k)
        self.assertEqual(entry['measured_max_allocated'], round(12003.60 * 2**20))
        self.assertEqual(entry['measured_max_reserved'], 12232 * 2**20)
        # one log: the fitted fixed offset closes the allocated gap to the byte
        self.assertEqual(entry['predicted_max_allocated_after'], entry['measured_max_allocated'])

    def test_json_device_is_the_device_file(self):
        """--json's device holds each key as the device file --output writes it: a
        choice by its name ("stack": "torchtitan"), not its number (it printed 5)."""
        job = ['--model', 'llama3.1-8b', '--world', '8', '--seq', '8192', '--gbs', '32']
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, 'fitted.device')
            p = run('calibrate', *job, '--measured-tokens-per-s', '65536', '--device-set', 'stack=torchtitan',
                    '--device-set', 'attention_kernel=fa2', '--output', out, '--json')
            self.assertEqual(p.returncode, 0, p.stderr)
            device = json.loads(p.stdout)['device']
            with open(out) as f:
                lines = [ln.split(' = ', 1) for ln in f.read().splitlines() if ' = ' in ln and ln[0] != '#']
            written = {k: v for k, v in lines if k != 'name'}
            self.assertEqual(set(device), set(written))
            for key, value in written.items():
                self.assertEqual(str(device[key]), value, key)
            self.assertEqual((device['stack'], device['attention_kernel'], device['gemm_library']),
                             ('torchtitan', 'fa2', 'auto'))
            self.assertIsInstance(device['matmul_efficiency_ppm'], int)

    def test_measured_figures_and_framework_logs(self):
        """A measured figure without a log and a torchtitan log of a job given by flags:
        one run fits one constant, says which it left, and the device records the runs."""
        job = ['--model', 'llama3.1-8b', '--world', '8', '--seq', '8192', '--gbs', '32', '--set', 'zero_stage=3']
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, 'fitted.device')
            p = run('calibrate', *job, '--measured-tokens-per-s', '65536', '--output', out, '--json')
            self.assertEqual(p.returncode, 0, p.stderr)
            doc = json.loads(p.stdout)
            entry = doc['logs'][0]
            self.assertAlmostEqual(entry['measured_step_s'], 4.0, delta=1e-9)
            self.assertAlmostEqual(entry['predicted_step_after_s'] / 4.0, 1, delta=0.005)
            fitted = {c['key']: c['fitted'] for c in doc['constants']}
            self.assertEqual(fitted, {'matmul_efficiency_ppm': True, 'fp8_efficiency_ppm': False,
                                      'attention_efficiency_ppm': False, 'microbatch_overhead_ns': False,
                                      'comm_efficiency_ppm': False, 'moe_load_spread_ppm': False,
                                      'inter_node_efficiency_ppm': False})
            self.assertEqual(doc['device']['calibrated_runs'], 1)
            with open(out) as f:
                self.assertIn('calibrated_runs = 1', f.read())
            log = os.path.join(d, 'titan.log')
            with open(log, 'w') as f:
                for step in (1, 10, 20):
                    f.write('[rank0]:[titan] - root - INFO - \033[31mstep: %2d  \033[32mloss: 9.00000  '
                            'memory: 60.50GiB(63.68%%)  \033[34mtps: 8,192  tflops: 400.00  mfu: 40.44%%\033[39m\n'
                            % step)
            p = run('calibrate', *job, '--log', log, '--log-format', 'torchtitan')
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn('fitted from the runs: matmul_efficiency_ppm', p.stdout)
            self.assertIn('left at the device\'s value: fp8_efficiency_ppm, attention_efficiency_ppm', p.stdout)
            self.assertIn('calibrated_runs = 1', p.stdout)
        for extra, needle in ((['--measured-step-s', 'soon'], '--measured-step-s soon: not a positive decimal number'),
                              (['--log', 'x', '--log-format', 'deepspeed'], '--log-format deepspeed: not megatron'),
                              (['--world', '8', '--measured-step-s', '2'], '--model or --hf-config is required')):
            p = run('calibrate', *extra)
            self.assertEqual(p.returncode, 2)
            self.assertIn(needle, p.stderr)

    def test_moe_logs_fit_the_load_spread(self):
        """Two Megatron-LM logs of one MoE job (8 experts, top-2, ep 8 on 8 GPUs), one run with
        --moe-router-force-load-balancing and one dropless: the dropless run's extra time is the
        busiest rank's load, and calibrate fits the router's load spread (moe_load_spread_ppm) from
        it, with the GEMM rate; the steps are what a device with that spread predicts."""
        def moe_log(path, forced, step_ms):
            with open(os.path.join(DATA, 'llama32-1b-dp8.log')) as f:
                lines = [l for l in f.read().splitlines() if 'memory (MB)' not in l]
            args = {'expert_model_parallel_size': '8', 'moe_ffn_hidden_size': '8192', 'moe_grouped_gemm': 'True',
                    'moe_router_force_load_balancing': str(forced), 'moe_router_topk': '2',
                    'moe_token_dispatcher_type': 'alltoall', 'num_experts': '8'}
            start = next(i for i, l in enumerate(lines) if l.endswith(' arguments ------------------------'))
            end = next(i for i, l in enumerate(lines) if 'end of arguments' in l)
            block = lines[start + 1:end] + ['  %s %s %s' % (k, '.' * (45 - len(k)), v) for k, v in args.items()]
            block.sort(key=lambda l: l.split()[0].lower())
            body = [re.sub(r'elapsed time per iteration \(ms\): [0-9.]+',
                           'elapsed time per iteration (ms): %.1f' % step_ms, l) for l in lines[end + 1:]]
            with open(path, 'w') as f:
                f.write('\n'.join(lines[:start + 1] + block + [lines[end]] + body) + '\n')

        with tempfile.TemporaryDirectory() as d:
            logs = [os.path.join(d, n) for n in ('forced.log', 'dropless.log')]
            for path, forced in zip(logs, (True, False)):
                moe_log(path, forced, 1000.0)
            # the steps a device whose router spreads its loads by 0.6 predicts
            p = run('calibrate', '--log', ','.join(logs), '--device-set', 'moe_load_spread_ppm=600000', '--json')
            self.assertEqual(p.returncode, 0, p.stderr)
            truth = [e['predicted_step_before_s'] for e in json.loads(p.stdout)['logs']]
            self.assertGreater(truth[1], 1.1 * truth[0])
            for path, forced, step in zip(logs, (True, False), truth):
                moe_log(path, forced, 1000 * step)
            p = run('calibrate', '--log', ','.join(logs), '--json')
            self.assertEqual(p.returncode, 0, p.stderr)
            doc = json.loads(p.stdout)
            fitted = {c['key'] for c in doc['constants'] if c['fitted']}
            self.assertEqual(fitted, {'matmul_efficiency_ppm', 'moe_load_spread_ppm'})
            self.assertAlmostEqual(doc['device']['moe_load_spread_ppm'] / 600000, 1, delta=0.02)
            for e in doc['logs']:
                self.assertAlmostEqual(e['predicted_step_after_s'] / e['measured_step_s'], 1, delta=0.005)
            # the forced-balance run alone cannot tell the spread
            p = run('calibrate', '--log', logs[0], '--json')
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(json.loads(p.stdout)['device']['moe_load_spread_ppm'], 0)

    def test_table(self):
        p = run('calibrate', '--log', os.path.join(DATA, 'llama32-1b-dp8.log'))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('max allocated, rank 0', p.stdout)
        self.assertIn('fitted workspace_bytes:', p.stdout)

    def test_refusals(self):
        with tempfile.TemporaryDirectory() as d:
            bad = os.path.join(d, 'bad.log')
            with open(bad, 'w') as f:
                f.write('starting\n iteration 1/ 5 | elapsed time per iteration (ms): soon |\n')
            p = run('calibrate', '--log', bad)
            self.assertEqual(p.returncode, 2)
            self.assertFalse(p.stdout)
            self.assertEqual(p.stderr.strip(), 'mem4d: --log %s: line 2: elapsed time per iteration (ms) '
                             'is not a number' % bad)
            p = run('calibrate', '--log', os.path.join(d, 'missing.log'))
            self.assertEqual(p.returncode, 2)
            self.assertIn('No such file', p.stderr)
            p = run('calibrate')
            self.assertEqual(p.returncode, 2)
            self.assertIn('calibrate needs --log FILE or a measured figure', p.stderr)

    def test_every_argument_megatron_prints(self):
        # The same job from the log with every argument of Megatron-LM's
        # arguments.py (torch dtypes, enums, lists, names without dots).
        figures = []
        for name in ('llama31-8b-all-arguments.log', 'llama31-8b-cp2-16gpu.log'):
            p = run('calibrate', '--log', os.path.join(DATA, name), '--json')
            self.assertEqual(p.returncode, 0, p.stderr)
            entry = json.loads(p.stdout)['logs'][0]
            figures.append((entry['predicted_step_before_s'], entry['predicted_step_after_s']))
        self.assertEqual(figures[0], figures[1])

    def test_absurd_measurements(self):
        # Refused with a sentence, never fitted (issue 24, item 4).
        head = open(os.path.join(DATA, 'llama32-1b-dp8.log')).read().split('-- end of arguments --')[0]
        head += '-- end of arguments ---------------------\n'
        step = ' iteration %d/ 9 | elapsed time per iteration (ms): %s |\n'
        mem = ('[Rank %d] (after 2 iterations) memory (MB) | allocated: %s | max allocated: %s | reserved: %s | '
               'max reserved: %s\n')
        cases = [
            (step % (1, '1e-300') + step % (2, '1e-300'), 'elapsed time per iteration 1e-300 ms is outside'),
            (step % (1, '900.0') + step % (2, '1e18'), 'elapsed time per iteration 1e+18 ms is outside'),
            (step % (1, '900.0'), 'one iteration line only: the first is warm-up'),
            (step % (1, '900.0') + step % (2, '900.0') + mem % (0, 0, 0, 0, 0), 'max allocated must be above 0 MB'),
            (step % (1, '900.0') + step % (2, '900.0') + mem % (8, 1, 9000, 2, 9500),
             'the memory line is of rank 8, but the job has 8 GPUs'),
            (step % (1, '900.0') + step % (2, '900.0') + mem % (0, 1, 9e8, 2, 9.5e8),
             'the memory lines call for workspace_bytes of'),
        ]
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, 'x.log')
            out = os.path.join(d, 'x.device')
            for tail, why in cases:
                with open(path, 'w') as f:
                    f.write(head + tail)
                p = run('calibrate', '--log', path, '--output', out)
                self.assertEqual(p.returncode, 2, (tail, p.stdout))
                self.assertIn(why, p.stderr)
                self.assertFalse(os.path.exists(out))

    def test_absurd_measured_figures(self):
        # A figure given without a log is held to the log's rule: a step
        # outside [0.1 ms, 1 day], given or made from a throughput of the
        # job, is refused; before, --measured-step-s 1e308 was fitted (the
        # GEMM efficiency pinned at 2%), its 309-digit step printed and a
        # device file written.
        job = ['--model', 'llama3.1-8b', '--world', '8', '--seq', '8192', '--gbs', '32']
        cases = [(['--measured-step-s', '1e308'], '--measured-step-s: a measured step of 1e+308 s is outside'),
                 (['--measured-step-s', '0.00001'], '--measured-step-s: a measured step of 1e-05 s is outside'),
                 (['--measured-tokens-per-s', '1e308'], 'tokens/s of the whole job 1e+308 make a step of'),
                 (['--measured-tflops', '1e-9'], 'TFLOP/s per GPU 1e-09 make a step of')]
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, 'x.device')
            for extra, why in cases:
                p = run('calibrate', *job, *extra, '--output', out)
                self.assertEqual(p.returncode, 2, (extra, p.stdout))
                self.assertIn(why, p.stderr)
                self.assertIn('outside [0.1 ms, 1 day]', p.stderr)
                self.assertFalse(os.path.exists(out))
            log = os.path.join(d, 'titan.log')
            with open(log, 'w') as f:
                for step in (1, 2, 3):
                    f.write('[titan] step: %d  loss: 9.0  memory: 60.50GiB(63.68%%)  tps: 0.000001  tflops: 1  '
                            'mfu: 1%%\n' % step)
            p = run('calibrate', *job, '--log', log, '--log-format', 'torchtitan', '--output', out)
            self.assertEqual(p.returncode, 2, p.stdout)
            self.assertIn('tps (tokens/s per GPU) 1e-06 make a step of', p.stderr)
            self.assertFalse(os.path.exists(out))

    def test_measured_figures_are_decimal(self):
        # doc/cli.md: numbers are decimal only. strtod read '0x10' as 16 s.
        job = ['--model', 'llama3.1-8b', '--world', '8', '--seq', '8192', '--gbs', '32']
        for flag in ('--measured-step-s', '--measured-tflops', '--measured-tokens-per-s'):
            for text in ('0x10', ' 5', '+5', '0x1p4'):
                p = run('calibrate', *job, flag, text)
                self.assertEqual(p.returncode, 2, (flag, text, p.stdout))
                self.assertIn('%s %s: not a positive decimal number' % (flag, text), p.stderr)
            p = run('calibrate', *job, flag, '1.5e3', '--json')
            self.assertEqual(p.returncode, 0, (flag, p.stderr))

    def test_job_flags_with_a_megatron_log_are_refused(self):
        # A Megatron-LM log's arguments block (or the arguments after --) is
        # the job: --model llama3.1-70b --tp 8 beside an 8B log were passed
        # over in silence, the fit made of the 8B job.
        log = os.path.join(DATA, 'llama31-8b-cp2-16gpu.log')
        for extra in (['--model', 'llama3.1-70b'], ['--tp', '8'], ['--set', 'tp_comm_overlap=0'],
                      ['--model-set', 'num_layers=40'], ['--framework', 'torchtitan']):
            p = run('calibrate', '--log', log, *extra)
            self.assertEqual(p.returncode, 2, (extra, p.stdout))
            self.assertFalse(p.stdout)
            self.assertIn('mem4d: %s: a Megatron-LM log\'s arguments give its job' % extra[0], p.stderr)
        # with a measured figure they are that figure's job
        p = run('calibrate', '--log', log, '--model', 'llama3.1-8b', '--cp', '2', '--world', '16', '--seq', '8192',
                '--gbs', '256', '--measured-step-s', '12.3', '--json')
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(json.loads(p.stdout)['logs']), 2)

    def test_log_without_its_job_says_what_to_give(self):
        # A log whose arguments block was cut off: the errors said what was
        # missing ("neither dp nor world size is set", at the fit) but not
        # the flag that gives it.
        text = open(os.path.join(DATA, 'llama31-8b-cp2-16gpu.log')).read().splitlines()
        start = next(i for i, l in enumerate(text) if ' arguments ---' in l)
        end = next(i for i, l in enumerate(text) if 'end of arguments' in l)
        job = ['--num-layers', '32', '--hidden-size', '4096', '--num-attention-heads', '32', '--seq-length', '8192',
               '--max-position-embeddings', '8192', '--micro-batch-size', '1', '--global-batch-size', '256',
               '--bf16', '--vocab-size', '128256']
        with tempfile.TemporaryDirectory() as d:
            log = os.path.join(d, 'cut.log')
            with open(log, 'w') as f:
                f.write('\n'.join(text[:start] + text[end + 1:]) + '\n')
            p = run('calibrate', '--log', log)
            self.assertEqual(p.returncode, 2, p.stdout)
            self.assertIn("give the job's Megatron-LM arguments (after --)", p.stderr)
            p = run('calibrate', '--log', log, '--', *job)
            self.assertEqual(p.returncode, 2, p.stdout)
            self.assertIn('--world-size', p.stderr)
            p = run('calibrate', '--log', log, '--world-size', '16', '--', *job, '--context-parallel-size', '2')
            self.assertEqual(p.returncode, 0, p.stderr)

    def test_framework_log_is_of_its_framework(self):
        # A torchtitan (nanotron) log is a torchtitan (nanotron) job: without
        # --framework it was timed as Megatron-LM's, and the device it wrote
        # put the same job, described as torchtitan's, at 4.27 s against the
        # 4.00 s measured.
        job = ['--model', 'llama3.1-8b', '--world', '8', '--seq', '8192', '--gbs', '32']
        lines = {'torchtitan': 'step: %d  loss: 9.0  memory: 60.50GiB(63.68%%)  tps: 8,192  tflops: 1  mfu: 1%%\n',
                 'nanotron': 'iteration: %d / 9 | consumed_tokens: 1 | time_per_iteration_ms: 4K | lm_loss: 9\n'}
        with tempfile.TemporaryDirectory() as d:
            for fw, line in lines.items():
                log = os.path.join(d, fw + '.log')
                with open(log, 'w') as f:
                    f.write(''.join(line % i for i in (1, 2, 3)))
                before = {}
                for given in ([], ['--framework', fw], ['--framework', 'megatron'], ['--set', 'framework=megatron'],
                              ['--set', 'framework=' + fw]):
                    p = run('calibrate', *job, *given, '--log', log, '--log-format', fw, '--json')
                    self.assertEqual(p.returncode, 0, p.stderr)
                    before[tuple(given)] = json.loads(p.stdout)['logs'][0]['predicted_step_before_s']
                self.assertEqual(before[()], before[('--framework', fw)], fw)
                self.assertNotEqual(before[()], before[('--framework', 'megatron')], fw)
                # --set framework=megatron says so as --framework does, though megatron
                # is the key's default (the log's framework overrode it)
                self.assertEqual(before[('--set', 'framework=megatron')], before[('--framework', 'megatron')], fw)
                self.assertEqual(before[('--set', 'framework=' + fw)], before[('--framework', fw)], fw)

    def test_pinned_rate_is_said_as_written(self):
        # A rate that stops at its search bound is kept and said: the warning
        # names the value the device file gets (it said 1000000 where the
        # file held 999999: the search in log space stops short of its end).
        job = ['--model', 'llama3.1-8b', '--world', '8', '--seq', '8192', '--gbs', '32']
        for step in ('0.01', '80000'):
            p = run('calibrate', *job, '--measured-step-s', step, '--json')
            self.assertEqual(p.returncode, 0, p.stderr)
            said = re.search(r'matmul_efficiency_ppm stopped at its bound (\d+):', p.stderr)
            self.assertTrue(said, p.stderr)
            self.assertEqual(int(said.group(1)), json.loads(p.stdout)['device']['matmul_efficiency_ppm'])

    def test_clamped_workspace_is_said_and_written(self):
        # Below its least value the workspace is clamped, and the warning
        # and the device file say the value used, never "not set" (item 4).
        text = open(os.path.join(DATA, 'llama32-1b-dp8.log')).read()
        text = text.replace('max allocated: 12003.60', 'max allocated: 100.00').replace(
            'max reserved: 12232.00', 'max reserved: 200.00')
        with tempfile.TemporaryDirectory() as d:
            path, out = os.path.join(d, 'low.log'), os.path.join(d, 'low.device')
            with open(path, 'w') as f:
                f.write(text)
            p = run('calibrate', '--log', path, '--output', out)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn('mem4d: warning: the measured peaks are below the prediction', p.stderr)
            device = open(out).read()
            self.assertIn('workspace_bytes = 0\n', device)
            self.assertNotIn('not set', device)

    def test_only_regular_files(self):
        # The README promises exit 2 for a path that is not a regular file:
        # a FIFO used to hang calibrate, /dev/zero to read until memory ran out.
        with tempfile.TemporaryDirectory() as d:
            fifo = os.path.join(d, 'fifo')
            os.mkfifo(fifo)
            for path, kind in ((fifo, 'a FIFO (named pipe)'), ('/dev/zero', 'a character device'),
                               (d, 'a directory')):
                p = run('calibrate', '--log', path)
                self.assertEqual(p.returncode, 2)
                self.assertEqual(p.stderr.strip(), 'mem4d: --log %s: %s is %s, not a regular file; give the path '
                                 'of a Megatron-LM training log' % (path, path, kind))
                p = run('calibrate', '--log', os.path.join(DATA, 'llama32-1b-dp8.log'), '--device-file', path)
                self.assertEqual(p.returncode, 2)
                self.assertIn('not a regular file', p.stderr)


if __name__ == '__main__':
    MEM4D = sys.argv.pop(1)
    DATA = sys.argv.pop(1)
    unittest.main(verbosity=1)
