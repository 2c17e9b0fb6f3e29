// The parameter reader of each registered flow, by the flow's name.
#include "common/api/flow_params.hpp"

#include <array>
#include <stdexcept>
#include <string_view>

#include "common/api_requests/request_parsing.hpp"

namespace rr::api {
namespace {

struct ParamsReader {
  std::string_view flow_name;
  std::string (*read)(const http::Request& request, const flows::PathArguments& arguments);
};

// One line per registered flow (common/flows/flow_registry.cpp).
constexpr std::array kReaders{
    ParamsReader{"create_ride", read_ride_params},
    ParamsReader{"cancel_ride", read_cancel_params},
};

const ParamsReader* reader_of(const flows::RegisteredFlow& flow) {
  for (const auto& reader : kReaders) {
    if (reader.flow_name == flow.name) return &reader;
  }
  return nullptr;
}

}  // namespace

std::string read_flow_params(const flows::RegisteredFlow& flow, const http::Request& request,
                             const flows::PathArguments& arguments) {
  const auto* reader = reader_of(flow);
  if (!reader) throw std::logic_error("no parameter reader for the flow " + std::string(flow.name));
  return reader->read(request, arguments);
}

void require_params_readers() {
  for (const auto& flow : flows::all_flows()) {
    if (!reader_of(flow)) throw std::logic_error("no parameter reader for the flow " + std::string(flow.name));
  }
}

}  // namespace rr::api
