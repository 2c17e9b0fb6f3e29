// Packing a record's text, and the details derived from an object's id.
#include "tools/stripe_mock/records.hpp"

#include <functional>

namespace rr::stripe_mock {
namespace {

constexpr std::size_t kKeyLengthBytes = 1;
constexpr std::size_t kValueLengthBytes = 2;

constexpr char kDetailAlphabet[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

// SplitMix64: a small generator whose every state gives a well-mixed next value, so a stream
// seeded by a hash is as good as any.
std::uint64_t split_mix(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

std::string_view reason_name(RefundReason reason) {
  switch (reason) {
    case RefundReason::duplicate:
      return "duplicate";
    case RefundReason::fraudulent:
      return "fraudulent";
    case RefundReason::requested_by_customer:
      return "requested_by_customer";
    case RefundReason::none:
      break;
  }
  return "";
}

PackedText::PackedText(std::string_view idempotency_key, const std::optional<std::string>& description,
                       const Metadata& metadata)
    : description_length_(description ? static_cast<std::uint32_t>(description->size()) : 0),
      key_length_(static_cast<std::uint16_t>(idempotency_key.size())),
      has_description_(description.has_value()) {
  std::size_t size = idempotency_key.size() + description_length_;
  for (const auto& [key, value] : metadata) size += kKeyLengthBytes + kValueLengthBytes + key.size() + value.size();
  text_.reserve(size);
  text_.append(idempotency_key);
  if (description) text_.append(*description);
  // The parameters' limits (keys up to 40 characters, values up to 500) fit the length bytes.
  for (const auto& [key, value] : metadata) {
    text_.push_back(static_cast<char>(key.size()));
    text_.push_back(static_cast<char>(value.size() & 0xff));
    text_.push_back(static_cast<char>(value.size() >> 8));
    text_.append(key).append(value);
  }
}

std::optional<std::string_view> PackedText::description() const {
  if (!has_description_) return std::nullopt;
  return std::string_view(text_).substr(key_length_, description_length_);
}

Metadata PackedText::metadata() const {
  Metadata result;
  std::string_view packed = std::string_view(text_).substr(key_length_ + description_length_);
  while (packed.size() >= kKeyLengthBytes + kValueLengthBytes) {
    auto key_size = static_cast<unsigned char>(packed[0]);
    auto value_size = static_cast<std::size_t>(static_cast<unsigned char>(packed[1])) |
                      (static_cast<std::size_t>(static_cast<unsigned char>(packed[2])) << 8);
    packed.remove_prefix(kKeyLengthBytes + kValueLengthBytes);
    result.emplace_back(std::string(packed.substr(0, key_size)), std::string(packed.substr(key_size, value_size)));
    packed.remove_prefix(key_size + value_size);
  }
  return result;
}

std::string derived_detail(const IdSuffix& id, DerivedDetail purpose, std::size_t length, std::string_view prefix) {
  std::uint64_t state = std::hash<std::string_view>{}(std::string_view(id.data(), id.size())) ^
                        (static_cast<std::uint64_t>(purpose) * 0xd6e8feb86659fd93ULL);
  std::string detail(prefix);
  detail.reserve(prefix.size() + length);
  for (std::size_t i = 0; i < length; ++i) detail += kDetailAlphabet[split_mix(state) % (sizeof kDetailAlphabet - 1)];
  return detail;
}

}  // namespace rr::stripe_mock
