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
