#!/usr/bin/env python3
"""--device-file and --device-set in every subcommand that takes a GPU:
the file's figures are used (the device is named after the file's name or
preset, and the memory verdict moves with memory_bytes), --device-set wins
over the file, and a file it cannot read is one line on stderr naming the
line, exit status 2. Usage: cli-device.py MEM4D"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

MEM4D = None
JOB = ['--model', 'llama3.1-70b', '--tp', '8', '--pp', '4', '--world', '64', '--mbs', '1', '--seq', '8192',
       '--gbs', '64']
MEGATRON = ['--num-layers', '80', '--hidden-size', '8192', '--ffn-hidden-size', '28672',
            '--num-attention-heads', '64', '--group-query-attention', '--num-query-groups', '8',
            '--seq-length', '8192', '--max-position-embeddings', '8192', '--vocab-size', '128256',
            '--swiglu', '--tensor-model-parallel-size', '8', '--pipeline-model-parallel-size', '4',
            '--micro-batch-size', '1', '--global-batch-size', '64', '--bf16', '--use-distributed-optimizer',
            '--sequence-parallel', '--use-flash-attn', '--disable-bias-linear', '--position-embedding-type',
            'rope', '--normalization', 'RMSNorm', '--untie-embeddings-and-output-weights']


def run(*args):
    return subprocess.run([MEM4D, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)


class DeviceFile(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def write(self, name, text):
        path = os.path.join(self.dir.name, name)
        with open(path, 'w') as f:
            f.write(text)
        return path

    def test_estimate_uses_the_file(self):
        path = self.write('small.device', '# a 24 GiB card\npreset = h100-80\nname = small\n'
                          'memory_bytes = 25769803776\n')
        p = run('estimate', *JOB, '--device-file', path)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('on small,', p.stdout)
        self.assertIn(': oom', p.stdout)
        doc = json.loads(run('estimate', *JOB, '--device-file', path, '--json').stdout)
        self.assertEqual(doc['device_bytes'], 25769803776)
        # --device-set is applied after the file.
        doc = json.loads(run('estimate', *JOB, '--device-file', path, '--device-set',
                             'memory_bytes=206158430208', '--json').stdout)
        self.assertEqual(doc['device_bytes'], 206158430208)

    def test_check_and_plan_take_it(self):
        path = self.write('gb.device', 'preset = gb200-186\nnics_per_node = 2\n')
        p = run('check', '--world-size', '64', '--device-file', path, '--', *MEGATRON)
        self.assertIn(p.returncode, (0, 1), p.stderr)
        self.assertIn('gb200-186', p.stdout)
        p = run('plan', '--model', 'llama3.1-8b', '--gpus', '16', '--seq', '8192', '--gbs', '64',
                '--device-file', path, '--json')
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(json.loads(p.stdout))

    def test_file_of_another_gpu_is_said(self):
        # A device file of another GPU than --gpu names (a calibrated H100
        # file reused for an A100) replaced the preset silently: the A100
        # job was estimated as an H100's.
        p = run('calibrate', '--model', 'llama3.1-8b', '--world', '8', '--seq', '8192', '--gbs', '32',
                '--measured-step-s', '4', '--gpu', 'h100-80', '--output', os.path.join(self.dir.name, 'h100.device'))
        self.assertEqual(p.returncode, 0, p.stderr)
        path = os.path.join(self.dir.name, 'h100.device')
        p = run('estimate', *JOB, '--gpu', 'a100-80', '--device-file', path)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('mem4d: warning: --device-file %s describes another GPU than --gpu a100-80' % path, p.stderr)
        self.assertIn('on h100-80,', p.stdout)
        for gpu in (['--gpu', 'h100-80'], []):
            p = run('estimate', *JOB, *gpu, '--device-file', path)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertNotIn('warning', p.stderr)
        p = run('plan', '--model', 'llama3.1-8b', '--gpus', '8', '--seq', '4096', '--gpu', 'a100-80',
                '--device-file', self.write('gb.device', 'preset = gb200-186\n'))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('describes another GPU than --gpu a100-80', p.stderr)

    def test_refusals_name_the_line(self):
        cases = [('x.device', 'gpus_per_node = 4\nnvlink = 72\n', 'line 2: unknown device key "nvlink"'),
                 ('y.device', 'gpus_per_node 4\n', 'line 1: "gpus_per_node 4" is not KEY = VALUE'),
                 ('z.device', 'sm_count = 1\npreset = a100-80\n', 'line 2: preset must be the first key')]
        for name, text, needle in cases:
            for cmd in (['estimate', *JOB], ['plan', '--model', 'llama3.1-8b', '--gpus', '8', '--seq', '4096']):
                p = run(*cmd, '--device-file', self.write(name, text))
                self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
                self.assertFalse(p.stdout)
                self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
                self.assertIn(needle, p.stderr)
        p = run('estimate', *JOB, '--device-file', os.path.join(self.dir.name, 'missing.device'))
        self.assertEqual(p.returncode, 2)
        self.assertIn('cannot open', p.stderr)
        p = run('estimate', *JOB, '--device-set', 'warp_drive=1')
        self.assertEqual(p.returncode, 2)
        self.assertIn("unknown device key 'warp_drive'", p.stderr)


if __name__ == '__main__':
    MEM4D = sys.argv.pop(1)
    unittest.main(verbosity=1)
