// Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
#pragma once
// The component registry: every policy component (placement, assigner,
// cache, prefetcher, predictor, deferral) is registered here under a string
// key equal to its file name, with a params struct parsed by a cfg::Schema.
// Registration is explicit (register_baselines(Registry&)), not through
// static initialisers, which the linker drops from static libraries.
//
// A component class C registers as
//   struct C::Params { ...; static const cfg::Schema<Params>& schema(); };
//   C(const C::Params&);
//   registry.add<Base, C>("cache", "lru", "Least recently used.");
// and is created with registry.make<Base>("cache", "lru", params_table).
//
// Threading: a Registry is filled once, before any run (builtin_registry()
// builds it on first use, which C++ makes thread-safe), and is immutable
// afterwards: make() and the lookups are const and may be called from every
// `--jobs` worker at once. What make() returns belongs to the caller's run
// and thread (core/engine/policy.h).

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/config/schema.h"
#include "core/config/strategy_spec.h"

namespace moebench {

// Root of every component; families derive their interface from it.
class Component {
 public:
  virtual ~Component() = default;
  // The registry key, e.g. "mrs". Set by the registry when created.
  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }

 private:
  std::string name_;
};

class Registry : public ComponentCatalog {
 public:
  struct Entry {
    std::string family, kind, doc;
    const cfg::SchemaInfo* schema = nullptr;
    std::function<nlohmann::ordered_json(const cfg::Value&, const std::string&)> resolve;
    std::function<std::unique_ptr<Component>(const cfg::Value&, const std::string&)> make;
  };

  template <class Base, class C>
  void add(const std::string& family, const std::string& kind, std::string doc) {
    static_assert(std::is_base_of_v<Base, C>);
    Entry e;
    e.family = family;
    e.kind = kind;
    e.doc = std::move(doc);
    e.schema = &C::Params::schema();
    e.resolve = [](const cfg::Value& v, const std::string& prefix) {
      typename C::Params p{};
      C::Params::schema().parse(v, p, prefix);
      return C::Params::schema().to_json(p);
    };
    e.make = [kind](const cfg::Value& v, const std::string& prefix) -> std::unique_ptr<Component> {
      typename C::Params p{};
      C::Params::schema().parse(v, p, prefix);
      auto c = std::make_unique<C>(p);
      c->set_name(kind);
      return c;
    };
    insert(std::move(e));
  }

  // Creates a component. REQUIRES: family/kind registered and deriving from T.
  template <class T>
  std::unique_ptr<T> make(const std::string& family, const ComponentSpec& spec,
                          const std::string& prefix) const {
    const Entry& e = entry(family, spec.kind, spec.where);
    std::unique_ptr<Component> c = e.make(spec.params, prefix);
    T* t = dynamic_cast<T*>(c.get());
    if (!t)
      throw InternalError("component " + family + "/" + spec.kind + " has the wrong base class");
    c.release();
    return std::unique_ptr<T>(t);
  }

  // The names of an engine mechanism a strategy chooses by name (family
  // "attention": residency.attention's paths, core/engine/variants/), from
  // the engine's own list, so that a strategy's parse checks them with no
  // list of its own; kinds(family) returns them.
  void add_names(const std::string& family, std::vector<std::string> names);

  // ComponentCatalog
  std::vector<std::string> kinds(const std::string& family) const override;
  nlohmann::ordered_json resolve(const std::string& family, const std::string& kind,
                                 const cfg::Value& params,
                                 const std::string& prefix) const override;
  bool is_list_param(const std::string& family, const std::string& kind,
                     const std::string& key) const override;

  const Entry& entry(const std::string& family, const std::string& kind,
                     const Where& where = {}) const;
  std::vector<const Entry*> entries() const;

 private:
  void insert(Entry e);
  std::map<std::pair<std::string, std::string>, Entry> entries_;
  std::map<std::string, std::vector<std::string>> names_;  // add_names
};

}  // namespace moebench
