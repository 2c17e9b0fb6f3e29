// The flags of the operator subcommands: `--name value` or `--name=value` for values, `--name`
// alone for switches. Anything else (an unknown or repeated flag, a missing value or required
// flag, a number out of range) is a cli::UsageError: exit 2 with one line naming the problem.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace rr::api {

struct FlagSpec {
  std::vector<std::string> required;  // value flags that must be given
  std::vector<std::string> optional;  // value flags that may be given
  std::vector<std::string> switches;  // flags without a value (--json)
};

class Flags {
 public:
  // Parses args[first...] against `spec`; `command` ("keys show") prefixes every problem.
  static Flags parse(const std::vector<std::string>& args, std::size_t first, const FlagSpec& spec,
                     const std::string& command);

  const std::string& value(const std::string& name) const;  // a required flag's value
  std::optional<std::string> find(const std::string& name) const;
  bool has(const std::string& name) const;  // a switch, or a value flag that was given
  // The flag as a whole number within [min, max]; `fallback` when it was not given.
  std::int64_t integer(const std::string& name, std::int64_t fallback, std::int64_t min, std::int64_t max) const;
  // The flag as a non-negative number of seconds (decimals allowed), at most `max`.
  std::optional<double> seconds(const std::string& name, double max) const;

 private:
  std::string command_;
  std::map<std::string, std::string> values_;
  std::set<std::string> switches_;
};

}  // namespace rr::api
