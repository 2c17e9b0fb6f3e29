// The staged_jobs table as the enqueuer tests see it: stage jobs, and read which are still staged.
#pragma once

#include <set>
#include <string>

#include "support/test_database.hpp"

namespace rr::test {

// Wakes the enqueuer as the product's stagers do after their commit (EnqueuerWakeup): since
// migration 007 no trigger NOTIFYs on staged_jobs.
void notify_staged_jobs(TestDatabase& db);
// Commits `count` jobs in one statement, then NOTIFYs like a stager.
void stage_jobs(TestDatabase& db, int count, const std::string& name = "send_ride_receipt",
                const std::string& args = "[1]");
// The jids of the jobs still staged.
std::set<std::string> staged_jids(TestDatabase& db);
long staged_count(TestDatabase& db);

}  // namespace rr::test
