// How every database session of a binary behaves (DATABASE_PREPARED_STATEMENTS,
// DATABASE_STATEMENT_TIMEOUT): the pool hands them to each connection it opens.
#pragma once

#include <chrono>

#include "common/db/statements.hpp"

namespace rr::db {

struct SessionOptions {
  StatementMode statements = StatementMode::prepared;
  std::chrono::milliseconds statement_timeout{30000};  // per statement, set per transaction; 0: none
};

}  // namespace rr::db
