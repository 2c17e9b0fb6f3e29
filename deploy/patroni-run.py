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
"""
import logging
import sys
import time

logger = logging.getLogger('patroni.dcs.etcd3')


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
    etcd3.Etcd3._update_leader = _update_leader


def main():
    from patroni.version import __version__
    if __version__ == '3.0.2':
        _fix_etcd3_leader_put()
    from patroni.__main__ import main as patroni_main
    return patroni_main()


if __name__ == '__main__':
    sys.exit(main())
