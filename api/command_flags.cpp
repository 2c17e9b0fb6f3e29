// Flag parsing for the operator subcommands.
#include "api/command_flags.hpp"

#include <algorithm>

#include "common/cli/run_main.hpp"
#include "common/config/environment.hpp"

namespace rr::api {
namespace {

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::string expected_flags(const FlagSpec& spec) {
  std::string out;
  auto add = [&](const std::vector<std::string>& names, const char* suffix) {
    for (const auto& name : names) out += (out.empty() ? "--" : ", --") + name + suffix;
  };
  add(spec.required, " VALUE");
  add(spec.optional, " VALUE");
  add(spec.switches, "");
  return out.empty() ? "none" : out;
}

}  // namespace

Flags Flags::parse(const std::vector<std::string>& args, std::size_t first, const FlagSpec& spec,
                   const std::string& command) {
  Flags flags;
  flags.command_ = command;
  auto fail = [&](const std::string& problem) { throw cli::UsageError(command + ": " + problem); };
  for (std::size_t i = first; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (!arg.starts_with("--") || arg.size() == 2) {
      fail("unexpected argument \"" + arg + "\" (expected " + expected_flags(spec) + ")");
    }
    std::string name = arg.substr(2);
    std::optional<std::string> inline_value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      inline_value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    if (flags.values_.count(name) || flags.switches_.count(name)) fail("--" + name + " given twice");
    if (contains(spec.switches, name)) {
      if (inline_value) fail("--" + name + " takes no value");
      flags.switches_.insert(name);
      continue;
    }
    if (!contains(spec.required, name) && !contains(spec.optional, name)) {
      fail("unknown flag --" + name + " (expected " + expected_flags(spec) + ")");
    }
    if (!inline_value) {
      if (i + 1 >= args.size()) fail("--" + name + " needs a value");
      inline_value = args[++i];
    }
    flags.values_[name] = *inline_value;
  }
  for (const auto& name : spec.required) {
    if (!flags.values_.count(name)) fail("--" + name + " is required");
  }
  return flags;
}

const std::string& Flags::value(const std::string& name) const { return values_.at(name); }

std::optional<std::string> Flags::find(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

bool Flags::has(const std::string& name) const { return switches_.count(name) || values_.count(name); }

std::int64_t Flags::integer(const std::string& name, std::int64_t fallback, std::int64_t min, std::int64_t max) const {
  auto text = find(name);
  if (!text) return fallback;
  auto parsed = config::parse_integer(*text);
  if (!parsed || *parsed < min || *parsed > max) {
    throw cli::UsageError(command_ + ": --" + name + " must be a whole number from " + std::to_string(min) + " to " +
                          std::to_string(max) + ", not \"" + *text + "\"");
  }
  return *parsed;
}

std::optional<double> Flags::seconds(const std::string& name, double max) const {
  auto text = find(name);
  if (!text) return std::nullopt;
  auto parsed = config::parse_finite_decimal(*text);
  if (!parsed || *parsed < 0 || *parsed > max) {
    throw cli::UsageError(command_ + ": --" + name + " must be a number of seconds from 0 to " +
                          std::to_string(static_cast<std::int64_t>(max)) + ", not \"" + *text + "\"");
  }
  return *parsed;
}

}  // namespace rr::api
