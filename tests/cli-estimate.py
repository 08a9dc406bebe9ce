#!/usr/bin/env python3
"""`mem4d estimate`: the table, the JSON keys and values, and exit status 2
with one line on stderr for every kind of bad input. Usage: cli-estimate.py MEM4D"""
import json
import subprocess
import sys
import unittest

MEM4D = None
GOLDEN = ['--model', 'llama3.1-8b', '--gpu', 'h100-80', '--tp', '2', '--cp', '1', '--pp', '1',
          '--world', '4', '--mbs', '1', '--seq', '8192', '--mode', 'paper']


def run(*args):
    return subprocess.run([MEM4D, *args], capture_output=True, text=True, timeout=30)


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

    def test_full_mode_every_stage(self):
        p = run('estimate', '--model=llama3.1-70b', '--gpu=h100-80', '--tp=8', '--pp=4', '--dp=2',
                '--seq=8192', '--gbs=64', '--json')
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(p.stdout)
        self.assertEqual(doc['mode'], 'full')
        self.assertEqual([s['stage'] for s in doc['stages']], [0, 1, 2, 3])
        self.assertEqual(doc['peak_bytes'], max(s['total_bytes'] for s in doc['stages']))

    def test_table(self):
        p = run('estimate', *GOLDEN)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('llama3.1-8b on h100-80, tp 2 cp 1 pp 1 dp 2', p.stdout)
        self.assertIn('67.52', p.stdout)
        self.assertIn('tight', p.stdout)

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
        ]
        for extra, needle in cases:
            with self.subTest(extra=extra):
                p = run('estimate', *GOLDEN, *extra)
                self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
                self.assertEqual(p.stdout, '')
                lines = p.stderr.strip().splitlines()
                self.assertEqual(len(lines), 1, p.stderr)
                self.assertTrue(lines[0].startswith('mem4d: '), p.stderr)
                self.assertIn(needle, p.stderr)

    def test_paper_mode_refusal_is_explained(self):
        p = run('estimate', *GOLDEN, '--vpp', '2', '--pp', '2')
        self.assertEqual(p.returncode, 2)
        self.assertIn('paper mode does not model virtual pipeline stages', p.stderr)


if __name__ == '__main__':
    MEM4D = sys.argv.pop(1)
    unittest.main(verbosity=1)
