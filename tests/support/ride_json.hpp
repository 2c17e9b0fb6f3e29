// Reading a ride out of an API answer's JSON body, for tests.
#pragma once

#include <string>

namespace rr::test {

// Field `name` of the "ride" object in a 201 of POST /rides, a cancel's 200 or GET /rides/{id}:
// an integer as its digits, a string as it is, null as "null". Fails the test when the body has no
// ride.
std::string ride_field(const std::string& body, const char* name);

}  // namespace rr::test
