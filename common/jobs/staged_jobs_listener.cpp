// LISTEN staged_jobs on its own connection, waited on together with the stop signal.
#include "common/jobs/staged_jobs_listener.hpp"

#include <sys/socket.h>

#include <pqxx/pqxx>

#include "common/base/log.hpp"
#include "common/daemon/stop_signal.hpp"

namespace rr::jobs {

namespace {

constexpr const char* kChannel = "staged_jobs";

// True when the peer has closed the connection: a peek reads end of file.
bool socket_at_eof(int socket) {
  char byte;
  return ::recv(socket, &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

}  // namespace

// The receiver's class is Channel's own, not the anonymous namespace's: a field of a type with
// internal linkage draws -Wsubobject-linkage when the file is compiled inside a unity batch (the
// package build), where GCC no longer counts this file as the main one.
struct StagedJobsListener::Channel {
  // The payload is empty: a notification only means "look at the table".
  class WakeUpReceiver final : public pqxx::notification_receiver {
   public:
    using pqxx::notification_receiver::notification_receiver;
    void operator()(const std::string&, int) override {}
  };

  explicit Channel(const std::string& url) : connection(url), receiver(connection, kChannel) {}
  // Closing first spares the receiver's destructor an UNLISTEN, which on a dead session fails
  // inside libpqxx 6.4 and leaks its result; the server forgets the LISTEN with the session anyway.
  ~Channel() { connection.disconnect(); }
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
    auto& connection = channel_->connection;
    // libpqxx 6.4's get_notifs() does not reliably throw once the server has closed the session
    // (it can keep returning 0 on a socket at end of file), so look at the socket itself.
    auto require_open = [&] {
      if (!connection.is_open() || connection.sock() < 0 || socket_at_eof(connection.sock())) {
        throw pqxx::broken_connection("the LISTEN connection to the database was closed");
      }
    };
    if (connection.get_notifs() > 0) return true;
    require_open();
    if (daemon::wait_readable_unless_stopped(connection.sock(), timeout) != daemon::WakeReason::readable) return false;
    // Readable without a notification (a parameter status message, the server's goodbye before it
    // closes) costs one extra pass at most.
    connection.get_notifs();
    require_open();
    return true;
  } catch (...) {
    channel_.reset();
    throw;
  }
}

}  // namespace rr::jobs
