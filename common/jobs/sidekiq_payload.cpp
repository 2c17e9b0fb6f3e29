// Sidekiq payloads with RapidJSON; the arguments are spliced in verbatim, never re-serialized.
#include "common/jobs/sidekiq_payload.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cctype>

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

std::string sidekiq_payload(const StagedJob& job, std::string_view queue, std::int64_t enqueued_at_ms) {
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
  writer.Key("created_at");
  writer.Int64(job.created_at_ms);
  writer.Key("enqueued_at");
  writer.Int64(enqueued_at_ms);
  writer.EndObject();
  return {buffer.GetString(), buffer.GetSize()};
}

}  // namespace rr::jobs
