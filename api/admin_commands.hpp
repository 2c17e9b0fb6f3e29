// The API binary's operator subcommands: `migrate`, `user create`, `user token`.
#pragma once

#include <string>
#include <vector>

namespace rr::api {

int run_migrate();
int run_user_command(const std::vector<std::string>& args);

}  // namespace rr::api
