// One migrated database per migration set in the test cluster, copied for every TestDatabase:
// copying a database is a quarter of a second where running every migration and function file
// again is nearly a second more, for each of the several hundred databases a test run creates.
#pragma once

#include <string>

namespace rr::test {

// The name of a database holding exactly what `migrate` makes of an empty database with the
// migrations and function files compiled into this binary, created on the first call in the
// cluster that `admin_url` reaches and remembered by the process after its first call. Safe when
// many test processes call it at once: they wait for one builder. Connections to it are refused
// once it is built, so that CREATE DATABASE ... TEMPLATE never meets a session in it.
std::string migrated_template(const std::string& admin_url);

}  // namespace rr::test
