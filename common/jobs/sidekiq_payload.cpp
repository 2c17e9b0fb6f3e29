// Sidekiq payloads with RapidJSON; the arguments are spliced in verbatim, never re-serialized.
#include "common/jobs/sidekiq_payload.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cctype>
#include <charconv>
#include <stdexcept>

namespace rr::jobs {

std::string sidekiq_class_name(std::string_view job_name) {
  std::string name;
  bool word_start = true;
  for (char c : job_name) {
    if (c == '_') {
      word_start = true;
    } else if (c == '/') {
      name += "::";
      word_start = true;
    } else {
      name += word_start ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
      word_start = false;
    }
  }
  if (!name.ends_with("Job")) name += "Job";
  return name;
}

std::string sidekiq_timestamp(std::int64_t epoch_us, SidekiqTimestamps form) {
  // Times before 1970 never reach here (rows are stamped by now()); refusing them keeps the
  // integer arithmetic below simple and its output a plain "digits.digits".
  if (epoch_us < 0) throw std::invalid_argument("Sidekiq timestamp before 1970");
  char text[32];
  if (form == SidekiqTimestamps::milliseconds) {
    auto end = std::to_chars(text, text + sizeof text, epoch_us / 1000).ptr;
    return {text, end};
  }
  // Written from integers rather than through a double, whose shortest form drops trailing
  // zeros ("...000.1") and, for a whole second, the decimal point that makes it a float to Ruby.
  char* end = std::to_chars(text, text + sizeof text, epoch_us / 1'000'000).ptr;
  *end++ = '.';
  std::int64_t micros = epoch_us % 1'000'000;
  for (std::int64_t place = 100'000; place > 0; place /= 10) *end++ = static_cast<char>('0' + micros / place % 10);
  return {text, end};
}

std::string sidekiq_payload(const StagedJob& job, std::string_view queue, std::int64_t enqueued_at_us,
                            SidekiqTimestamps timestamps) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  const std::string class_name = sidekiq_class_name(job.job_name);
  writer.StartObject();
  writer.Key("class");
  writer.String(class_name.data(), static_cast<rapidjson::SizeType>(class_name.size()));
  writer.Key("args");
  // Verbatim: the row's JSONB text is valid JSON by construction, and re-encoding could change
  // how numbers are written.
  writer.RawValue(job.args_json.data(), job.args_json.size(), rapidjson::kArrayType);
  writer.Key("jid");
  writer.String(job.jid.data(), static_cast<rapidjson::SizeType>(job.jid.size()));
  writer.Key("queue");
  writer.String(queue.data(), static_cast<rapidjson::SizeType>(queue.size()));
  writer.Key("retry");
  writer.Bool(true);
  const std::string created_at = sidekiq_timestamp(job.created_at_us, timestamps);
  const std::string enqueued_at = sidekiq_timestamp(enqueued_at_us, timestamps);
  writer.Key("created_at");
  writer.RawValue(created_at.data(), created_at.size(), rapidjson::kNumberType);
  writer.Key("enqueued_at");
  writer.RawValue(enqueued_at.data(), enqueued_at.size(), rapidjson::kNumberType);
  writer.EndObject();
  return {buffer.GetString(), buffer.GetSize()};
}

}  // namespace rr::jobs
