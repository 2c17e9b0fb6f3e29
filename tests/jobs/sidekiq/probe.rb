# Reads what a Sidekiq client or its Web UI would see, through Sidekiq's own API, and prints it as
# one JSON object for tests/jobs/sidekiq_compat_test.cpp:
#   probe.rb queue NAME  {"size":N,"latency":S,"created_at_age_min":S,"created_at_age_max":S,
#                         "created_at_types":[..],"enqueued_at_types":[..]}
#   probe.rb retries     {"size":N,"jids":[..],"time_types":[..],"retry_count":N}
#                        (time_types: of every entry's created_at, enqueued_at and failed_at)
#   probe.rb retry-all   {"retried":N}  (Sidekiq::RetrySet#retry_all: the Web UI's "Retry All")
# Sidekiq connects to REDIS_URL.
require "json"
require "sidekiq/api"

def types(values)
  values.map { |value| value.class.name }.uniq.sort
end

command, argument = ARGV
result =
  case command
  when "queue"
    queue = Sidekiq::Queue.new(argument)
    records = queue.to_a
    now = Time.now.to_f
    ages = records.map { |record| now - record.created_at.to_f }
    {
      size: queue.size,
      latency: queue.latency,
      created_at_age_min: ages.min,
      created_at_age_max: ages.max,
      created_at_types: types(records.map { |record| record["created_at"] }),
      enqueued_at_types: types(records.map { |record| record["enqueued_at"] }),
    }
  when "retries"
    entries = Sidekiq::RetrySet.new.to_a
    times = entries.flat_map { |entry| entry.item.values_at("created_at", "enqueued_at", "failed_at") }
    {
      size: entries.size,
      jids: entries.map(&:jid),
      time_types: types(times),
      retry_count: entries.first && entries.first["retry_count"],
    }
  when "retry-all"
    retries = Sidekiq::RetrySet.new
    size = retries.size
    retries.retry_all
    {retried: size}
  else
    abort "usage: probe.rb queue NAME | retries | retry-all"
  end
puts JSON.generate(result)
