"""The shapes a suite runs against without a cluster: the plain shape, one rocket-rides-api over a
fresh database of its own (in the cluster an admin URL names) and the stand-in provider, each on a
free loopback port (the browser suite and the OpenAPI tests); and the stand-in provider alone (the
Stripe library's conformance test). stop() reports what the run left behind: a process that did
not exit 0, a sanitizer report."""

import os

from . import daemons, provider
from .postgres import FreshDatabase
from .process import stop_all

# Settings of the stack's own processes; everything else comes from the caller's environment
# (ASAN_OPTIONS, LSAN_OPTIONS, PATH).
OWNED_PREFIXES = ("DATABASE_", "REDIS_", "STRIPE_", "IDEMPOTENCY_", "MOCK_", "API_", "PORT", "METRICS_",
                  "SESSION_", "SHUTDOWN_", "RESPONSE_CACHE_", "TOKEN_CACHE_", "LISTEN_", "LOCAL_SERVERS")


def owned_removed(environ):
    return {k: v for k, v in environ.items() if not k.startswith(OWNED_PREFIXES)}


class ProviderShape:
    """The stand-in provider alone (the official Stripe library's conformance test)."""

    def __init__(self, bin_dir, log_dir, stripe_key, seed=None, environ=None):
        environ = os.environ if environ is None else environ
        daemons.binary(bin_dir, "rocket-rides-stripe-mock")
        self.log_dir = log_dir
        self.provider = provider.start(bin_dir, dict(owned_removed(environ), STRIPE_API_KEY=stripe_key), log_dir,
                                       seed=seed)
        self.stopped = False

    def stop(self):
        if self.stopped:
            return []
        self.stopped = True
        return stop_all([self.provider])

    def describe(self):
        return {"shape": "provider", "provider_port": self.provider.port,
                "provider_url": provider.base_url(self.provider), "log_dir": self.log_dir,
                "logs": {self.provider.name: self.provider.log_path}}


class PlainStack:
    def __init__(self, bin_dir, admin_url, log_dir, stripe_key, api_env=None, environ=None, db_prefix="rr_suite_"):
        """Starts everything, or stops what it started and raises."""
        environ = os.environ if environ is None else environ
        self.base_env = owned_removed(environ)
        self.api_binary = daemons.binary(bin_dir, "rocket-rides-api")
        daemons.binary(bin_dir, "rocket-rides-stripe-mock")
        self.log_dir = log_dir
        self.database = self.provider = self.api = None
        self.stopped = False
        try:
            self.database = FreshDatabase(admin_url, db_prefix)
            self.provider = provider.start(bin_dir, dict(self.base_env, STRIPE_API_KEY=stripe_key), log_dir)
            # The API's settings, for its subcommands too (`user create`).
            self.api_env = dict(self.base_env, DATABASE_URL=self.database.url,
                                STRIPE_API_BASE=provider.base_url(self.provider), STRIPE_API_KEY=stripe_key,
                                STRIPE_TIMEOUT="5", SHUTDOWN_TIMEOUT="5", SHUTDOWN_DRAIN="0", **(api_env or {}))
            daemons.migrate(self.api_binary, self.api_env)
            self.api = daemons.start_api(self.api_binary, self.api_env, log_dir)
        except BaseException:
            self.stop()
            raise

    @property
    def origin(self):
        return "http://127.0.0.1:%d" % self.api.port

    def create_rider(self, email, customer):
        return daemons.create_user(self.api_binary, self.api_env, email, customer)

    def stop(self):
        """Stops what was started (the API first) and drops the database; returns the problems:
        exit statuses other than 0 and sanitizer reports, one line each."""
        if self.stopped:
            return []
        self.stopped = True
        problems = stop_all([self.api, self.provider])
        if self.database is not None:
            self.database.drop()
        return problems

    def describe(self):
        """What a client of the stack needs, as plain data (the `up --json` line)."""
        return {"shape": "plain", "origin": self.origin, "api_port": self.api.port,
                "provider_port": self.provider.port, "provider_url": provider.base_url(self.provider),
                "database_url": self.database.url, "api_binary": self.api_binary, "api_env": self.api_env,
                "log_dir": self.log_dir, "logs": {p.name: p.log_path for p in (self.api, self.provider)}}
