// The staged_jobs table as the enqueuer tests see it: stage jobs, and read which are still staged.
#pragma once

#include <set>
#include <string>

#include "support/test_database.hpp"

namespace rr::test {

// Commits `count` jobs in one statement.
void stage_jobs(TestDatabase& db, int count, const std::string& name = "send_ride_receipt",
                const std::string& args = "[1]");
// The jids of the jobs still staged.
std::set<std::string> staged_jids(TestDatabase& db);
long staged_count(TestDatabase& db);

}  // namespace rr::test
