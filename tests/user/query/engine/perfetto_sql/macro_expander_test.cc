#include "user/query/engine/perfetto_sql/macro_expander.h"

#include <map>

#include <gtest/gtest.h>

namespace sluice {
namespace {

class MacroExpanderTest : public ::testing::Test {
 protected:
  void Define(const std::string& name, std::vector<std::string> args, const std::string& body) {
    PerfettoSqlMacro m;
    m.name = name;
    for (const std::string& a : args) m.args.push_back({a, "Expr"});
    m.return_kind = "Expr";
    m.body = body;
    macros_[name] = m;
  }
  std::string Expand(std::string_view text, PerfettoSqlParseError* error = nullptr) {
    std::string out;
    PerfettoSqlParseError e;
    const bool ok = ExpandPerfettoSqlMacros(
        text, [this](const std::string& n) -> const PerfettoSqlMacro* {
          auto it = macros_.find(n);
          return it == macros_.end() ? nullptr : &it->second;
        },
        &out, &e);
    if (error) *error = e;
    return ok ? out : "ERROR: " + e.message;
  }
  std::map<std::string, PerfettoSqlMacro> macros_;
};

TEST_F(MacroExpanderTest, ArgumentsReplaceTheirVariables) {
  Define("add", {"a", "b"}, "($a + $b)");
  EXPECT_TRUE(HasPerfettoSqlMacroCall("select add!(1, 2)"));
  EXPECT_FALSE(HasPerfettoSqlMacroCall("select 1 != 2, '!(' , \"x\"!"));
  EXPECT_EQ(Expand("select add!(1, f(2, 3)) as x"), "select (1 + f(2, 3)) as x");
  EXPECT_EQ(Expand("select add!((select 1, 2), 'a,b')"), "select ((select 1, 2) + 'a,b')");
}

TEST_F(MacroExpanderTest, MacrosCallMacros) {
  Define("one", {}, "1");
  Define("inc", {"x"}, "($x + one!())");
  Define("twice", {"x"}, "inc!(inc!($x))");
  EXPECT_EQ(Expand("select twice!(5)"), "select ((5 + 1) + 1)");
  EXPECT_EQ(Expand("select inc!(inc!(0))"), "select ((0 + 1) + 1)");
}

TEST_F(MacroExpanderTest, ErrorsNameTheCall) {
  Define("add", {"a", "b"}, "$a + $b");
  Define("loop", {}, "loop!()");
  PerfettoSqlParseError e;
  EXPECT_EQ(Expand("select add!(1)", &e), "ERROR: macro add! takes 2 arguments, given 1");
  EXPECT_EQ(e.offset, 7u);
  EXPECT_EQ(Expand("select nope!(1)"),
            "ERROR: no such macro: nope! (define it with CREATE PERFETTO MACRO, or INCLUDE the module that does)");
  EXPECT_EQ(Expand("select add!(1, 2"), "ERROR: macro call add!( is not closed");
  EXPECT_NE(Expand("select loop!()").find("more than 32 levels deep"), std::string::npos);
}

}  // namespace
}  // namespace sluice
