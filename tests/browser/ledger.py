"""What each hidden key left behind, read independently of the pages: the key and its ride in
PostgreSQL (psql), the charge at the stand-in provider (/_mock/charges). Raises AssertionError with
what it found when a key has anything but exactly one ride and one charge."""

import json


class Ledger:
    def __init__(self, database, provider):
        self.database = database
        self.provider = provider

    def user_id(self, email):
        rows = self.database.rows("SELECT id FROM users WHERE email = '%s'" % email.replace("'", "''"))
        if len(rows) != 1:
            raise AssertionError("expected one user %s, found %d" % (email, len(rows)))
        return rows[0]["id"]

    def keys_of(self, user_id):
        return self.database.rows(
            "SELECT id, idempotency_key, response_code, response_body, recovery_point, "
            "locked_at IS NOT NULL AS locked, payment_idempotency_key, request_path "
            "FROM idempotency_keys WHERE user_id = %d ORDER BY id" % user_id)

    def rides_of(self, user_id):
        return self.database.rows(
            "SELECT id, idempotency_key_id, stripe_charge_id FROM rides WHERE user_id = %d ORDER BY id" % user_id)

    def _key(self, user_id, hidden_key):
        keys = [k for k in self.keys_of(user_id) if k["idempotency_key"] == hidden_key]
        if len(keys) != 1:
            raise AssertionError("expected one idempotency key %r of user %d, found %d" % (
                hidden_key, user_id, len(keys)))
        return keys[0]

    def _ride(self, user_id, key):
        rides = [r for r in self.rides_of(user_id) if r["idempotency_key_id"] == key["id"]]
        if len(rides) != 1:
            raise AssertionError("expected one ride for key %r, found %d: %s" % (
                key["idempotency_key"], len(rides), rides))
        return rides[0]

    def paid_ride(self, user_id, customer, hidden_key):
        """The one ride and the one charge of a key that ended in a booked ride: the key finished
        with 201, its ride carries the charge the stand-in made once under the key's payment key
        for this rider's customer. Returns {"ride_id", "charge_id", "amount", "currency"}."""
        key = self._key(user_id, hidden_key)
        if key["response_code"] != 201 or key["recovery_point"] != "finished" or key["locked"]:
            raise AssertionError("key %r did not finish with 201: %s" % (hidden_key, key))
        ride = self._ride(user_id, key)
        charges = [c for c in self.provider.charges() if c["idempotency_key"] == key["payment_idempotency_key"]]
        if len(charges) != 1:
            raise AssertionError("expected one charge at the stand-in for key %r (payment key %s), found %d: %s" % (
                hidden_key, key["payment_idempotency_key"], len(charges), charges))
        charge = charges[0]
        if ride["stripe_charge_id"] != charge["id"] or charge["customer"] != customer:
            raise AssertionError("ride %s records charge %s, the stand-in charged %s to %s (rider's customer %s)" % (
                ride["id"], ride["stripe_charge_id"], charge["id"], charge["customer"], customer))
        return {"ride_id": str(ride["id"]), "charge_id": charge["id"], "amount": charge["amount"],
                "currency": charge["currency"]}

    def declined_ride(self, user_id, customer, hidden_key):
        """A key whose card was declined: finished with the stored 402, its ride without a charge,
        no money moved for the customer. Returns the stored decline message."""
        key = self._key(user_id, hidden_key)
        if key["response_code"] != 402 or key["locked"]:
            raise AssertionError("key %r did not finish with 402: %s" % (hidden_key, key))
        ride = self._ride(user_id, key)
        if ride["stripe_charge_id"] is not None:
            raise AssertionError("the declined key's ride records a charge: %s" % ride)
        moved = [c for c in self.provider.charges() if c["customer"] == customer]
        if moved:
            raise AssertionError("the stand-in moved money for the declined customer %s: %s" % (customer, moved))
        return json.loads(key["response_body"])["error"]["message"]

    def rider_totals(self, user_id, customer, keys, charges):
        """The rider has exactly `keys` keys and as many rides, and the stand-in exactly `charges`
        charges for the rider's customer: nothing beyond the keys the test submitted."""
        found_keys, found_rides = self.keys_of(user_id), self.rides_of(user_id)
        found_charges = [c for c in self.provider.charges() if c["customer"] == customer]
        if (len(found_keys), len(found_rides), len(found_charges)) != (keys, keys, charges):
            raise AssertionError(
                "expected %d keys, %d rides and %d charges for the rider, found %d, %d and %d:"
                "\nkeys %s\nrides %s\ncharges %s" % (
                    keys, keys, charges, len(found_keys), len(found_rides), len(found_charges),
                    [(k["idempotency_key"], k["response_code"]) for k in found_keys], found_rides, found_charges))


def dollars(cents, currency):
    """The amount as the ride page shows it in the ride's currency ($X.YY for usd)."""
    if currency != "usd":
        raise AssertionError("the suite knows only how usd amounts are shown, the charge is in %s" % currency)
    return "$%d.%02d" % (cents // 100, cents % 100)
