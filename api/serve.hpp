// `rocket-rides-api` with no subcommand: serve HTTP until SIGTERM/SIGINT, then stop gracefully.
#pragma once

namespace rr::api {
int run_server();
}
