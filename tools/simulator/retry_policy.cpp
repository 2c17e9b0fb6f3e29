// The final-answer rule for clients.
#include "tools/simulator/retry_policy.hpp"

namespace rr::client {

bool is_final_status(int status) {
  if (status >= 200 && status < 300) return true;
  return status >= 400 && status < 500 && status != 409 && status != 429;
}

}  // namespace rr::client
