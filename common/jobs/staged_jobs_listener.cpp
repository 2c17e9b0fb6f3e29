// LISTEN staged_jobs on its own connection, waited on together with the stop signal.
#include "common/jobs/staged_jobs_listener.hpp"

#include <pqxx/pqxx>

#include "common/base/log.hpp"
#include "common/daemon/stop_signal.hpp"

namespace rr::jobs {

namespace {

constexpr const char* kChannel = "staged_jobs";

// The payload is empty: a notification only means "look at the table".
class WakeUpReceiver final : public pqxx::notification_receiver {
 public:
  using pqxx::notification_receiver::notification_receiver;
  void operator()(const std::string&, int) override {}
};

}  // namespace

struct StagedJobsListener::Channel {
  explicit Channel(const std::string& url) : connection(url), receiver(connection, kChannel) {}
  pqxx::connection connection;
  WakeUpReceiver receiver;  // declared after the connection, so destroyed before it
};

StagedJobsListener::StagedJobsListener(std::string database_url) : database_url_(std::move(database_url)) {}

StagedJobsListener::~StagedJobsListener() = default;

bool StagedJobsListener::wait(std::chrono::milliseconds timeout) {
  if (!channel_) {
    channel_ = std::make_unique<Channel>(database_url_);
    log::info("listening for staged jobs", {{"channel", kChannel}});
    return true;
  }
  try {
    if (channel_->connection.get_notifs() > 0) return true;
    const int socket = channel_->connection.sock();
    if (socket < 0) throw pqxx::broken_connection("the LISTEN connection to the database was closed");
    if (daemon::wait_readable_unless_stopped(socket, timeout) != daemon::WakeReason::readable) return false;
    // Readable without a notification (a parameter status message) is a harmless extra pass.
    channel_->connection.get_notifs();
    return true;
  } catch (...) {
    channel_.reset();
    throw;
  }
}

}  // namespace rr::jobs
