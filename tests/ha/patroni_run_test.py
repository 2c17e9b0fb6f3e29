#!/usr/bin/python3
"""deploy/patroni-run.py against Debian's installed Patroni, without a cluster: the code it replaces
hashes to the value written in the file, patching says so in one line and leaves the fixed
function in place (still decorated as 3.0.2's), a changed function refuses with one line naming
the version and both hashes, and another version is left alone."""
import importlib.util
import io
import os
import subprocess
import sys
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'deploy', 'patroni-run.py')
SKIP = 77  # CTest's SKIP_RETURN_CODE: no Patroni on this machine


def load():
    spec = importlib.util.spec_from_file_location('patroni_run', SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class PatroniRunTest(unittest.TestCase):
    def setUp(self):
        from patroni.dcs import etcd3
        self.etcd3 = etcd3
        self.original = etcd3.Etcd3.__dict__['_update_leader']
        self.run_module = load()

    def tearDown(self):
        self.etcd3.Etcd3._update_leader = self.original
        if '_put_leader_if_ours' in self.etcd3.Etcd3.__dict__:
            del self.etcd3.Etcd3._put_leader_if_ours

    def test_the_installed_code_is_the_code_the_fix_was_written_for(self):
        from patroni.version import __version__
        self.assertEqual(__version__, self.run_module.PATCHED_VERSION)
        self.assertEqual(self.run_module.replaced_source_sha256(), self.run_module.EXPECTED_SOURCE_SHA256)

    def test_patching_logs_one_line_and_replaces_the_function(self):
        said = io.StringIO()
        self.assertTrue(self.run_module.patch('3.0.2', said))
        self.assertEqual(said.getvalue().count('\n'), 1, said.getvalue())
        self.assertIn('patroni-run: patched Patroni 3.0.2: Etcd3._update_leader (sha256 %s)'
                      % self.run_module.EXPECTED_SOURCE_SHA256, said.getvalue())
        self.assertIsNot(self.etcd3.Etcd3.__dict__['_update_leader'], self.original)
        self.assertTrue(callable(self.etcd3.Etcd3._put_leader_if_ours))
        # A ReturnFalseException from the lease refresh is False, as under 3.0.2's own decorator.
        fake = type('FakeEtcd3', (), {})()
        fake._retry = type('Retry', (), {'copy': lambda self: self})()

        def refresh_fails(*args, **kwargs):
            raise self.etcd3.ReturnFalseException()
        fake._run_and_handle_exceptions = refresh_fails
        fake._do_refresh_lease = None
        self.assertIs(self.etcd3.Etcd3._update_leader(fake), False)

    def test_changed_code_refuses_with_the_version_and_both_hashes(self):
        def _update_leader(self):  # what a distribution update might have made of it
            return bool(self._lease)
        self.etcd3.Etcd3._update_leader = self.etcd3.catch_return_false_exception(_update_leader)
        said = io.StringIO()
        with self.assertRaises(self.run_module.UnexpectedCode) as refused:
            self.run_module.patch('3.0.2', said)
        line = str(refused.exception)
        self.assertNotIn('\n', line)
        self.assertIn('refusing to start: Patroni 3.0.2', line)
        self.assertIn('expected sha256 ' + self.run_module.EXPECTED_SOURCE_SHA256, line)
        self.assertIn('found ' + self.run_module.replaced_source_sha256(), line)
        self.assertEqual(said.getvalue(), '')  # nothing patched, nothing said to be
        self.assertNotIn('_put_leader_if_ours', self.etcd3.Etcd3.__dict__)

    def test_the_script_exits_3_with_that_line_before_patroni_runs(self):
        # The whole main(), in a child whose Patroni has a changed _update_leader.
        child = ("import importlib.util, sys\n"
                 "from patroni.dcs import etcd3\n"
                 "etcd3.Etcd3._update_leader = lambda self: True\n"
                 "spec = importlib.util.spec_from_file_location('patroni_run', %r)\n"
                 "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
                 "sys.argv = ['patroni-run.py', '/nonexistent.yml']\n"
                 "sys.exit(m.main())\n" % SCRIPT)
        result = subprocess.run([sys.executable, '-c', child], capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 3, result.stderr)
        self.assertEqual(result.stderr.count('\n'), 1, result.stderr)
        self.assertIn('patroni-run: refusing to start: Patroni 3.0.2', result.stderr)

    def test_another_version_is_left_alone(self):
        said = io.StringIO()
        self.assertFalse(self.run_module.patch('3.0.3', said))
        self.assertIs(self.etcd3.Etcd3.__dict__['_update_leader'], self.original)
        self.assertEqual(said.getvalue(), '')


if __name__ == '__main__':
    try:
        import patroni.dcs.etcd3  # noqa: F401
    except ImportError:
        print('patroni is not installed: skipped')
        sys.exit(SKIP)
    unittest.main()
