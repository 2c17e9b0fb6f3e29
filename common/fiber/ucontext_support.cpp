// Test builds switch fiber stacks with ucontext, the only Boost.Context switch ASan can follow
// (BOOST_USE_UCONTEXT and BOOST_USE_ASAN, set by ROCKET_RIDES_SANITIZE). Debian's libboost_context
// is built for the assembly switch and lacks the one out-of-line function the ucontext switch
// needs: each thread's record of the context it runs. Defined here as Boost's own
// src/fiber.cpp defines it for that build; Release builds use the library's switch and skip this.
#if defined(BOOST_USE_UCONTEXT)

#include <boost/context/fiber_ucontext.hpp>

namespace boost::context::detail {

fiber_activation_record*& fiber_activation_record::current() noexcept {
  // The thread's own (main) context, made the first time the thread switches and freed with it.
  struct MainContext {
    fiber_activation_record* record = new fiber_activation_record();
    ~MainContext() { delete record; }
  };
  thread_local MainContext main_context;
  thread_local fiber_activation_record* current_record = main_context.record;
  return current_record;
}

}  // namespace boost::context::detail

#endif
