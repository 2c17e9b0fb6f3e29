// libpqxx 6.4 keeps both handles private: connection_base::raw_connection() and the result
// constructor behind the gate pqxx::internal::gate::result_creation::create. Access checks do not
// apply to the names in an explicit template instantiation ([temp.spec.general]/6), so an
// explicit instantiation may take a pointer to a private member and hand it out through a friend
// function: the standard, legal way in without patching or redefining libpqxx's headers. Both
// members exist in the Debian package as used here (raw_connection is inline; create is inline and
// calls result's exported constructor). libpqxx's own encoding lookup (internal::enc_group) is not
// exported, so the client encoding's group is named here the same way.
#include "common/db/raw_libpq.hpp"

#include <array>
#include <cstring>
#include <pqxx/internal/encoding_group.hxx>
#include <pqxx/internal/gates/result-creation.hxx>

namespace rr::db::raw_libpq {
namespace {

template <typename Tag, typename Tag::type Member>
struct Unlock {
  friend typename Tag::type member(Tag) { return Member; }
};

struct RawConnection {
  using type = pqxx::internal::pq::PGconn* (pqxx::connection_base::*)() const;
  friend type member(RawConnection);
};
template struct Unlock<RawConnection, &pqxx::connection_base::raw_connection>;

struct ResultCreation {
  using type = pqxx::result (*)(pqxx::internal::pq::PGresult*, const std::string&, pqxx::internal::encoding_group);
  friend type member(ResultCreation);
};
template struct Unlock<ResultCreation, &pqxx::internal::gate::result_creation::create>;

// As libpqxx 6.4's enc_group(name): the multibyte encodings by their PostgreSQL names (the enum's
// names), every other encoding reads byte by byte.
pqxx::internal::encoding_group encoding_group_of(PGconn* conn) {
  using group = pqxx::internal::encoding_group;
  struct Named {
    const char* name;
    group value;
  };
  static constexpr std::array<Named, 14> multibyte{{{"BIG5", group::BIG5},
                                                    {"EUC_CN", group::EUC_CN},
                                                    {"EUC_JP", group::EUC_JP},
                                                    {"EUC_JIS_2004", group::EUC_JIS_2004},
                                                    {"EUC_KR", group::EUC_KR},
                                                    {"EUC_TW", group::EUC_TW},
                                                    {"GB18030", group::GB18030},
                                                    {"GBK", group::GBK},
                                                    {"JOHAB", group::JOHAB},
                                                    {"MULE_INTERNAL", group::MULE_INTERNAL},
                                                    {"SJIS", group::SJIS},
                                                    {"SHIFT_JIS_2004", group::SHIFT_JIS_2004},
                                                    {"UHC", group::UHC},
                                                    {"UTF8", group::UTF8}}};
  const char* name = pg_encoding_to_char(PQclientEncoding(conn));
  for (const auto& candidate : multibyte) {
    if (std::strcmp(candidate.name, name) == 0) return candidate.value;
  }
  return group::MONOBYTE;
}

}  // namespace

PGconn* connection(const pqxx::connection_base& conn) { return (conn.*member(RawConnection{}))(); }

pqxx::result adopt(PGresult* result, const std::string& query, PGconn* conn) {
  return member(ResultCreation{})(result, query, encoding_group_of(conn));
}

}  // namespace rr::db::raw_libpq
