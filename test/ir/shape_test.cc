#include <catch2/catch.hpp>

#include "ir/shape.h"
#include "weft/error.h"

using namespace weft;
using namespace weft::ir;

TEST_CASE("dims parse static sizes, symbols and products", "[ir][shape]") {
  CHECK(Dim::parse("768")->size() == 768);
  CHECK(Dim::parse("B")->str() == "B");
  CHECK(Dim::parse("S*B")->str() == "B*S");
  CHECK(Dim::parse("2*B")->factor() == 2);
  CHECK_FALSE(Dim::parse(""));
  CHECK_FALSE(Dim::parse("B**S"));
  CHECK_FALSE(Dim::parse("7x"));
  CHECK(*Dim::parse("B*S") == Dim::symbol("B") * Dim::symbol("S"));
}

TEST_CASE("dim arithmetic stays exact", "[ir][shape]") {
  Dim b = Dim::symbol("B");
  CHECK((b * Dim(768)).str() == "768*B");
  CHECK(b.plus(b)->str() == "2*B");
  CHECK_FALSE(b.plus(Dim(3)));
  CHECK((b * Dim::symbol("S")).dividedBy(b)->str() == "S");
  CHECK_FALSE(Dim(7).dividedBy(Dim(2)));
  CHECK(numElements({b, Dim(768)}).str() == "768*B");
}

TEST_CASE("evaluation under a binding", "[ir][shape]") {
  Shape s = {Dim::symbol("B"), Dim(768)};
  CHECK(evaluate(s, {{"B", 16}}) == std::vector<int64_t>{16, 768});
  CHECK_THROWS_WITH(evaluate(s, {}), Catch::Contains("symbol \"B\" is not bound"));
  CHECK_THROWS_WITH(evaluate({Dim(int64_t(1) << 40), Dim(int64_t(1) << 40)}, {}), Catch::Contains("overflow"));
}

TEST_CASE("bindings parse from the command line form", "[ir][shape]") {
  Binding b = parseBinding("B=16,S=128");
  CHECK(b.at("B") == 16);
  CHECK(b.at("S") == 128);
  CHECK_THROWS_WITH(parseBinding("B=x"), Catch::Contains("expected SYMBOL=SIZE"));
  CHECK_THROWS_WITH(parseBinding("B=-1"), Catch::Contains("\"B=-1\""));
  // An empty batch is a size: weft::compile gives it its own specialised program.
  CHECK(parseBinding("B=0").at("B") == 0);
}

TEST_CASE("a product with a factor of 0 is the static 0, never 0*B", "[ir][shape]") {
  // 0*B compared unequal to 0: a [0*B, 4] did not broadcast with [0, 4] nor reshape to [0].
  for (const char* text : {"0*B", "B*0", "B*0*S", "0", "000*B", "0*999999999999999999*99999999",
                           "999999999999999999*99999999*0*B"}) {
    INFO(text);
    std::optional<Dim> d = Dim::parse(text);
    REQUIRE(d);
    CHECK(*d == Dim(0));
    CHECK(d->isStatic());
    CHECK(d->symbols().empty());
    CHECK(d->str() == "0");
  }
  Dim b = Dim::symbol("B");
  CHECK(b * Dim(0) == Dim(0));
  CHECK(Dim(0) * b == Dim(0));
  CHECK((Dim(0) * Dim(int64_t(1) << 62) * Dim(int64_t(1) << 62)) == Dim(0)); // no overflow
  CHECK(numElements({b, Dim(0), Dim::symbol("S")}) == Dim(0));
  CHECK(numElements({b, Dim(0)}).isStatic());
  CHECK(evaluate({*Dim::parse("0*B"), Dim(4)}, {}) == std::vector<int64_t>{0, 4});
  CHECK_FALSE(Dim::parse("0*B*"));
}

TEST_CASE("sizes past 18 digits are refused naming the limit", "[ir][shape]") {
  CHECK(parseBinding("B=999999999999999999").at("B") == 999'999'999'999'999'999);
  CHECK(parseBinding("B=0000000000000000000016").at("B") == 16); // leading zeros aside
  CHECK_THROWS_WITH(parseBinding("B=9223372036854775807"),
                    "binding \"B=9223372036854775807\": sizes go up to 10^18 - 1 (18 digits)");
  CHECK_THROWS_WITH(parseBinding("S=4,B=1000000000000000000"),
                    "binding \"B=1000000000000000000\": sizes go up to 10^18 - 1 (18 digits)");
  CHECK(parseSize("0") == 0);
  CHECK(parseSize("007") == 7);
  CHECK_THROWS_WITH(parseSize("1000000000000000000"),
                    "\"1000000000000000000\" is too large: sizes go up to 10^18 - 1 (18 digits)");
  for (const char* bad : {"", "-1", "+1", " 1", "1e3", "0x10", "1..4"})
    CHECK_THROWS_WITH(parseSize(bad),
                      "\"" + std::string(bad) + "\" is not a size (a whole number, 0 or more)");
}
