"""CPU accounting from /proc, in clock ticks (utime+stime, plus cutime+cstime of reaped
children), read before and after each measured run, so that a run's CPU splits into PostgreSQL
(the postmaster and its children, exited backends in its cutime/cstime), the APIs, the provider,
the load generator, the proxies and the rest of the machine."""

import glob
import time
import os

CLK = os.sysconf("SC_CLK_TCK")


def _stat_fields(text):
    """The fields of a /proc/PID/stat after "pid (comm) ": state is [0], ppid [1], utime [11]."""
    return text[text.rindex(")") + 2:].split()


def ticks_of(pid):
    """utime+stime+cutime+cstime of a process, 0 if it has exited (or pid is None)."""
    if not pid:
        return 0
    try:
        with open("/proc/%d/stat" % pid) as f:
            v = _stat_fields(f.read())
        return sum(int(x) for x in v[11:15])
    except (OSError, ValueError, IndexError):
        return 0


def sum_ticks(pids):
    return sum(ticks_of(pid) for pid in pids)


def machine_ticks():
    """Busy ticks of all CPUs: user nice system irq softirq steal."""
    with open("/proc/stat") as f:
        for line in f:
            v = line.split()
            if v[0] == "cpu":
                return sum(int(v[i]) for i in (1, 2, 3, 6, 7, 8))
    return 0


def context_switches(pids):
    """Voluntary and involuntary context switches of all the threads of these processes."""
    total = 0
    for pid in pids:
        for status in glob.glob("/proc/%d/task/*/status" % pid):
            try:
                with open(status) as f:
                    for line in f:
                        if line.startswith(("voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:")):
                            total += int(line.split()[1])
            except (OSError, ValueError):
                pass  # a thread that ended meanwhile
    return total


def postgres_ticks(postmaster_pid):
    """The postmaster's and all its children's ticks."""
    total = 0
    for path in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(path) as f:
                text = f.read()
        except OSError:
            continue  # it exited between the glob and the read
        pid = int(text.split(None, 1)[0])
        v = _stat_fields(text)
        if pid == postmaster_pid or int(v[1]) == postmaster_pid:
            total += sum(int(x) for x in v[11:15])
    return total


class Window:
    """The CPU of one run: begin() before the load, end(loadgen_ticks) after it. Whose CPU the
    columns show is read at each call: api_pids() (every API the bench runs; nginx in its own
    rows), proxy_pids() (PgBouncer and HAProxy once started), mock_pid, the postmaster's pid.
    Read in nested order: the machine's window encloses the processes' and theirs the clock's, so
    that "other" (the machine less the processes) is not pushed below zero by the time between reads."""

    def __init__(self, postmaster_pid, api_pids, proxy_pids, mock_pid):
        self.postmaster_pid = postmaster_pid
        self.api_pids, self.proxy_pids, self.mock_pid = api_pids, proxy_pids, mock_pid

    def _counters(self):
        apis = self.api_pids()
        return (postgres_ticks(self.postmaster_pid()), sum_ticks(apis), context_switches(apis),
                ticks_of(self.mock_pid()), sum_ticks(self.proxy_pids()))

    def begin(self):
        self.all0 = machine_ticks()
        self.c0 = self._counters()
        self.t0 = time.time()

    def end(self, loadgen_ticks):
        """Sets cores ("pg api mock loadgen proxies other", cores as %.2f), pg, api and switches
        (ticks and context switches over the run)."""
        t1 = time.time()
        c1 = self._counters()
        all1 = machine_ticks()
        pg, api, switches, mock, proxy = (b - a for a, b in zip(self.c0, c1))
        wall = t1 - self.t0
        other = max(0, (all1 - self.all0) - pg - api - mock - loadgen_ticks - proxy)
        self.pg, self.api, self.switches = pg, api, switches
        self.cores = " ".join("%.2f" % (t / CLK / wall) for t in (pg, api, mock, loadgen_ticks, proxy, other))
        return self
