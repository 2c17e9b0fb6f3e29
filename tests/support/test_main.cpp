// The shared Boost.Test entry point; every *_test executable links it.
#define BOOST_TEST_MODULE rocket_rides
#include <boost/test/unit_test.hpp>
