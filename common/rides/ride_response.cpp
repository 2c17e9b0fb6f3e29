// Rendering of ride JSON with RapidJSON's writer (numbers written as the database gave them).
#include "common/rides/ride_response.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace rr::rides {
namespace {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

void write_string(Writer& w, const std::string& s) { w.String(s.data(), static_cast<rapidjson::SizeType>(s.size())); }

void write_nullable(Writer& w, const char* name, const std::optional<std::string>& value) {
  w.Key(name);
  if (value)
    write_string(w, *value);
  else
    w.Null();
}

void write_ride(Writer& w, const RideView& ride) {
  w.StartObject();
  w.Key("id");
  w.Int64(ride.id);
  for (auto [name, value] : {std::pair{"origin_lat", &ride.origin_lat}, std::pair{"origin_lon", &ride.origin_lon},
                             std::pair{"target_lat", &ride.target_lat}, std::pair{"target_lon", &ride.target_lon}}) {
    w.Key(name);
    w.RawValue(value->data(), value->size(), rapidjson::kNumberType);
  }
  write_nullable(w, "stripe_charge_id", ride.stripe_charge_id);
  w.Key("created_at");
  write_string(w, ride.created_at);
  write_nullable(w, "cancelled_at", ride.cancelled_at);
  write_nullable(w, "stripe_refund_id", ride.stripe_refund_id);
  w.EndObject();
}

}  // namespace

RideView ride_view_from(const db::Row& row) { return ride_view_from(row, 0); }

RideView ride_view_from(const db::Row& row, db::Row::size_type first) {
  auto nullable = [&](db::Row::size_type column) -> std::optional<std::string> {
    if (row[first + column].is_null()) return std::nullopt;
    return row[first + column].as<std::string>();
  };
  RideView ride;
  ride.id = row[first].as<std::int64_t>();
  ride.origin_lat = row[first + 1].as<std::string>();
  ride.origin_lon = row[first + 2].as<std::string>();
  ride.target_lat = row[first + 3].as<std::string>();
  ride.target_lon = row[first + 4].as<std::string>();
  ride.stripe_charge_id = nullable(5);
  ride.created_at = row[first + 6].as<std::string>();
  ride.cancelled_at = nullable(7);
  ride.stripe_refund_id = nullable(8);
  return ride;
}

std::string ride_created_body(const RideView& ride) {
  rapidjson::StringBuffer buf;
  Writer w(buf);
  w.StartObject();
  w.Key("message");
  w.String("Ride created and charged.");
  w.Key("ride");
  write_ride(w, ride);
  w.EndObject();
  return buf.GetString();
}

std::string ride_body(const RideView& ride) {
  rapidjson::StringBuffer buf;
  Writer w(buf);
  w.StartObject();
  w.Key("ride");
  write_ride(w, ride);
  w.EndObject();
  return buf.GetString();
}

std::string ride_list_body(const std::vector<RideView>& rides, std::optional<std::int64_t> next_cursor) {
  rapidjson::StringBuffer buf;
  Writer w(buf);
  w.StartObject();
  w.Key("rides");
  w.StartArray();
  for (const auto& ride : rides) write_ride(w, ride);
  w.EndArray();
  w.Key("next_cursor");
  if (next_cursor)
    w.String(std::to_string(*next_cursor).c_str());
  else
    w.Null();
  w.EndObject();
  return buf.GetString();
}

}  // namespace rr::rides
