#!/usr/bin/python3
"""Runs Patroni (`patroni-run.py CONFIG`, as `patroni CONFIG`), with one fix for Debian 12's 3.0.2.

Patroni 3.0.2's etcd3 backend renews the leader key with an unconditional put whenever the lease
it holds differs from the one its (possibly stale) view of etcd shows: Etcd3._update_leader. Its
reads are serializable, i.e. answered by whichever etcd member it talks to, and a member that was
cut off answers from its old state for a moment after the partition heals. Seen here
(scripts/cluster.sh partition/heal of the leader, 2026-11-26): the old leader n1, back from a
partition, read "leader: n1" from its own etcd member, took a new lease, overwrote the key that n3
had held for 15 s, promoted its stale copy and made n3 demote: every commit n3 had acknowledged in
those 15 s was gone (rewound away). Patroni 3.0.3 fixed it (patroni/patroni#2689 and #2693): the
key is only written if it still holds this member's name or does not exist, in one etcd
transaction. This file applies that same compare-and-put to 3.0.2 and runs Patroni unchanged
otherwise; on any other version it changes nothing. Remove it once Patroni >= 3.0.3 is deployed.

A version string is not the code: a Debian update that patched 3.0.2's _update_leader without
changing the version would have this fix replace code it was not written against. So before
patching, the source of the function it replaces is hashed (SHA-256 of inspect.getsource, as
written under its decorator) and compared with the hash of 3.0.2's, below; any other code refuses
to start, with one line and exit status 3, before Patroni runs. After patching, one line says so.
"""
import hashlib
import inspect
import logging
import sys
import time

logger = logging.getLogger('patroni.dcs.etcd3')

PATCHED_VERSION = '3.0.2'
# SHA-256 of inspect.getsource(Etcd3._update_leader) in Patroni 3.0.2 (Debian 12's 3.0.2-1).
EXPECTED_SOURCE_SHA256 = 'f929a8bc9ee48cfa2fc52a909dac4ae2ec4db14cda01c354cd16f254dc69d2f3'
EXIT_UNEXPECTED_CODE = 3


class UnexpectedCode(Exception):
    """The function the fix replaces is not the one it was written against."""


def _undecorated(function):
    # 3.0.2 wraps _update_leader in catch_return_false_exception, whose wrapper keeps the function
    # in its closure (no functools.wraps, so no __wrapped__): the source that matters is inside.
    seen = set()
    while id(function) not in seen:
        seen.add(id(function))
        inner = getattr(function, '__wrapped__', None)
        if inner is None:
            cells = [c.cell_contents for c in (getattr(function, '__closure__', None) or ())]
            functions = [c for c in cells if inspect.isfunction(c)]
            inner = functions[0] if len(functions) == 1 and functions[0].__name__ == '_update_leader' else None
        if inner is None:
            return function
        function = inner
    return function


def replaced_source_sha256():
    """SHA-256 of the installed Etcd3._update_leader's source, the code the fix replaces."""
    from patroni.dcs import etcd3
    try:
        source = inspect.getsource(_undecorated(etcd3.Etcd3._update_leader))
    except (OSError, TypeError) as e:  # no source to compare: as unknown as other code
        return 'no source (%s)' % e
    return hashlib.sha256(source.encode('utf-8')).hexdigest()


def check_replaced_code(version):
    found = replaced_source_sha256()
    if found != EXPECTED_SOURCE_SHA256:
        raise UnexpectedCode(
            'patroni-run: refusing to start: Patroni %s has an Etcd3._update_leader other than the one the '
            'leader-key fix was written for (expected sha256 %s, found %s); check deploy/patroni-run.py '
            'against the installed Patroni' % (version, EXPECTED_SOURCE_SHA256, found))
    return found


def _fix_etcd3_leader_put():
    from patroni.dcs import Leader, ReturnFalseException
    from patroni.dcs import etcd3

    def _put_leader_if_ours(self, retry=None):
        # One transaction: put if the key holds our name; else put only if it does not exist.
        key = etcd3.base64_encode(self.leader_path)
        put = {'request_put': {'key': key, 'value': etcd3.base64_encode(self._name), 'lease': self._lease}}
        body = {
            'compare': [{'key': key, 'result': 'EQUAL', 'target': 'VALUE', 'value': etcd3.base64_encode(self._name)}],
            'success': [put],
            'failure': [{'request_txn': {
                'compare': [{'key': key, 'result': 'EQUAL', 'target': 'CREATE', 'create_revision': '0'}],
                'success': [put]}}],
        }
        answer = self._client.call_rpc('/kv/txn', body, retry)
        if answer.get('succeeded'):
            return True
        nested = (answer.get('responses') or [{}])[0].get('response_txn') or {}
        return bool(nested.get('succeeded'))

    def _update_leader(self):
        # Etcd3._update_leader of 3.0.2, with the unconditional put replaced by the one above.
        retry = self._retry.copy()

        def _retry(*args, **kwargs):
            kwargs['retry'] = retry
            return retry(*args, **kwargs)

        self._run_and_handle_exceptions(self._do_refresh_lease, True, retry=_retry)

        if self._lease:
            cluster = self.cluster
            leader_lease = cluster and isinstance(cluster.leader, Leader) and cluster.leader.session
            if leader_lease != self._lease:
                retry.deadline = retry.stoptime - time.time()
                if retry.deadline < 1:
                    raise etcd3.Etcd3Error('update_leader timeout')
                try:
                    if not self._run_and_handle_exceptions(self._put_leader_if_ours, retry=_retry):
                        logger.error('the leader key holds another member: not overwriting it')
                        return False
                except ReturnFalseException:
                    pass
        return bool(self._lease)

    etcd3.Etcd3._put_leader_if_ours = _put_leader_if_ours
    # Decorated as 3.0.2's is: an etcd error while refreshing the lease is "not the leader"
    # (False), not an exception out of the HA loop.
    etcd3.Etcd3._update_leader = etcd3.catch_return_false_exception(_update_leader)


def patch(version, stream=sys.stderr):
    """Applies the fix to `version` (only 3.0.2) after checking the code it replaces; says so."""
    if version != PATCHED_VERSION:
        return False
    found = check_replaced_code(version)
    _fix_etcd3_leader_put()
    stream.write('patroni-run: patched Patroni %s: Etcd3._update_leader (sha256 %s) writes the leader key '
                 'with a compare-and-put\n' % (version, found))
    stream.flush()
    return True


def main():
    from patroni.version import __version__
    try:
        patch(__version__)
    except UnexpectedCode as e:
        sys.stderr.write('%s\n' % e)
        sys.stderr.flush()
        return EXIT_UNEXPECTED_CODE
    from patroni.__main__ import main as patroni_main
    return patroni_main()


if __name__ == '__main__':
    sys.exit(main())
