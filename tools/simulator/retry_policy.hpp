// How a good client retries: the same key, exponential backoff with full jitter (the daemons'
// Backoff, so a crowd of clients does not hammer a recovering server in step), and a clear rule
// for which answers are final.
#pragma once

#include <chrono>

namespace rr::client {

struct RetryPolicy {
  int max_attempts = 8;
  std::chrono::milliseconds base_delay{200};
  std::chrono::milliseconds max_delay{10000};
};

// Final answers end the retries: any 2xx, and any 4xx except 409 and 429 (a stored 402 included).
// 409 (key in flight), 429 (too many of this user's requests in progress; nothing was written),
// 5xx and no answer at all are worth retrying with the same key.
bool is_final_status(int status);

}  // namespace rr::client
