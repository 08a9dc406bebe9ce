#!/usr/bin/env python3
"""`mem4d calibrate`: fits the device to the logs in data/megatron-logs, the
fitted step matches the measured one, --output writes a device file that
estimate, plan and check take with --device-file, and a log it cannot read is
one line on stderr naming the line, exit status 2.
Usage: cli-calibrate.py MEM4D DATA_DIR"""
import json
import os
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
            self.assertIn('calibrate needs --log FILE', p.stderr)

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
