// Boost.URL's and Boost.JSON's compiled parts, built with the fuzz targets' flags (the header-only
// way both libraries offer): libFuzzer is fed the branches of Boost.URL's percent-decoding, which
// the form codec calls, and Boost.JSON is the reference reader the JSON targets compare with.
#include <boost/json/src.hpp>
#include <boost/url/src.hpp>
