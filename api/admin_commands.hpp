// The API binary's operator subcommands: `migrate`, `user`, `keys`, `archive`, `reconcile` and
// `rotate-provider-key`. Each opens one
// database session, prints its result on stdout (one JSON document with --json) and exits with a
// status from common/cli/exit_codes.hpp.
#pragma once

#include <string>
#include <vector>

namespace rr::api {

int run_migrate();
// user create | user token (issue, --list, --revoke): api/admin_commands.cpp
int run_user_command(const std::vector<std::string>& args);
// keys show | keys list --unfinished | keys unlock: api/key_commands.cpp
int run_keys_command(const std::vector<std::string>& args);
// archive list: api/archive_commands.cpp
int run_archive_command(const std::vector<std::string>& args);
// reconcile --since TIME [--until TIME] [--dry-run]: api/reconcile_command.cpp
int run_reconcile_command(const std::vector<std::string>& args);
// rotate-provider-key [--dry-run]: api/provider_key_commands.cpp
int run_rotate_provider_key_command(const std::vector<std::string>& args);

}  // namespace rr::api
