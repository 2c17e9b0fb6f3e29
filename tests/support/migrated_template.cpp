// The migrated template: built under an advisory lock, under a temporary name, and renamed once
// complete, so that a builder that dies half-way leaves nothing another test could copy.
#include "support/migrated_template.hpp"

#include <map>
#include <mutex>
#include <pqxx/pqxx>

#include "common/db/migrations.hpp"
#include "support/test_database.hpp"

namespace rr::test {
namespace {

// Any change to a migration or a function file gives a new name, so a cluster that outlives a
// rebuild (a developer's local servers) never hands out a stale schema.
std::string fingerprint_of_embedded_schema(pqxx::nontransaction& tx) {
  std::string text;
  for (const auto& migration : db::embedded_migrations()) {
    text += std::to_string(migration.version) + '\n' + std::string(migration.name) + '\n' + std::string(migration.sql);
  }
  for (const auto& function : db::embedded_functions()) {
    text += std::string(function.name) + '\n' + std::string(function.checksum) + '\n';
  }
  return tx.exec_params1("SELECT left(md5($1), 16)", text)[0].as<std::string>();
}

// Held by the one session that builds the template; every other caller waits on it.
constexpr long long kTemplateBuilderLock = 0x72725f74706c;  // "rr_tpl"

}  // namespace

std::string migrated_template(const std::string& admin_url) {
  // Found or built once per test process: the later databases of a suite are copied without
  // another connection, fingerprint or lookup.
  static std::mutex mutex;
  static std::map<std::string, std::string> known;  // admin URL -> template name
  std::lock_guard lock(mutex);
  if (auto found = known.find(admin_url); found != known.end()) return found->second;

  pqxx::connection admin(admin_url);
  pqxx::nontransaction tx(admin);
  const std::string name = "rr_template_" + fingerprint_of_embedded_schema(tx);
  auto exists = [&] {
    return tx.exec_params1("SELECT count(*) FROM pg_database WHERE datname = $1", name)[0].as<int>() == 1;
  };
  if (exists()) return known[admin_url] = name;

  tx.exec_params("SELECT pg_advisory_lock($1)", kTemplateBuilderLock);
  if (!exists()) {
    const std::string building = "rr_template_building_" + random_suffix();
    tx.exec("CREATE DATABASE " + building);
    {
      pqxx::connection migrator(with_database(admin_url, building));
      db::migrate(migrator, db::embedded_migrations());
    }
    tx.exec("ALTER DATABASE " + building + " RENAME TO " + name);
    tx.exec("ALTER DATABASE " + name + " WITH IS_TEMPLATE true ALLOW_CONNECTIONS false");
  }
  tx.exec_params("SELECT pg_advisory_unlock($1)", kTemplateBuilderLock);
  return known[admin_url] = name;
}

}  // namespace rr::test
