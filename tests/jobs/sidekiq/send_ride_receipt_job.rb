# The worker class the enqueuer names for `send_ride_receipt` jobs (jobs::sidekiq_class_name), as
# a real Sidekiq process runs it in tests/jobs/sidekiq_compat_test.cpp. It records every jid it
# performs with the ride it was for, and fails on the first run of the one jid the test names, so
# the test can watch Sidekiq's own retry take that job.
require "sidekiq"

class SendRideReceiptJob
  # Sidekiq::Worker rather than Sidekiq::Job: the one name every Sidekiq from 5 to 8 knows.
  include Sidekiq::Worker

  PERFORMED = "rocket_rides_test:performed"  # list of "<jid> <ride_id>", one per perform
  FAIL_ONCE = "rocket_rides_test:fail_once"  # the jid whose first run raises

  def perform(receipt)
    Sidekiq.redis do |redis|
      if redis.get(FAIL_ONCE) == jid && redis.set("rocket_rides_test:failed:#{jid}", "1", nx: true)
        raise "failing #{jid} once, as the test asked"
      end
      redis.rpush(PERFORMED, "#{jid} #{receipt.fetch("ride_id")}")
    end
  end
end
