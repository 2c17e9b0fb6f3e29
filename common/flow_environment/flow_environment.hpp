// What a flow's phases may use beyond their key. Below the flows (common/rides/) and the registry
// that lists them (common/flows/), so both see it without either seeing the other's folder.
#pragma once

#include <string>

#include "common/jobs/enqueuer_wakeup.hpp"
#include "common/payments/stripe_client.hpp"

namespace rr::flows {

// The provider, the key's user, and the enqueuer's wake-up.
struct FlowEnvironment {
  const payments::StripeClient& stripe;
  std::string stripe_customer_id;
  // The process's wake-up (the API's, the completer's); null when ENQUEUER_WAKEUP_DEBOUNCE is 0 or
  // in tests that do not care, and then the enqueuer's poll finds the jobs.
  jobs::EnqueuerWakeup* enqueuer_wakeup = nullptr;

  // For a phase whose atomic section staged jobs, after it committed (never inside the section:
  // the enqueuer would look before the rows are visible). Never blocks.
  void jobs_staged() const {
    if (enqueuer_wakeup) enqueuer_wakeup->jobs_staged();
  }
};

}  // namespace rr::flows
