//! No module cycle in any crate of the workspace (issue 43). Each crate's modules are read with
//! `syn` from its sources; every reference to another module of the same crate (a `use` tree, or
//! a path in code, in a type or in a macro's arguments, that starts with `crate`, `super` or
//! `self`) is resolved through `pub use` re-exports to the file that defines the item. Then, for
//! every folder, the graph among its children (its files and sub-folders, a sub-folder standing
//! for everything under it) must have no cycle: two files that use each other, and two folders
//! whose files use each other, both fail.
//!
//! A reference between a module and its own ancestor or descendant is not an edge: `mod.rs` and
//! `lib.rs` declare and re-export (`STYLE.md`), and a re-export is followed to its file. Test code
//! (`#[cfg(test)]` items) is left out: a test may use whatever it checks.
//!
//! `cargo test --release --test integration module_graph -- --nocapture` prints each crate's
//! graph, folder by folder.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// A module as its path from the crate root (`["compare", "estimate"]`; the root is empty).
type Module = Vec<String>;

/// One crate's modules, each with the file that holds it.
struct Crate {
    name: String,
    files: BTreeMap<Module, PathBuf>,
}

impl Crate {
    /// Every `.rs` file under `src`, by the module it holds.
    fn read(name: &str, src: &Path) -> Self {
        let mut files = BTreeMap::new();
        let mut stack = vec![src.to_owned()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    let rel = path.strip_prefix(src).unwrap().with_extension("");
                    let mut module: Module = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
                    if matches!(module.last().map(String::as_str), Some("mod"))
                        || module == ["lib"]
                        || module == ["main"]
                    {
                        module.pop();
                    }
                    files.insert(module, path);
                }
            }
        }
        Self { name: name.to_owned(), files }
    }
}

/// What one file says: the paths it refers to (absolute, from the crate root) and what it
/// re-exports (a name in a module, and the path it stands for).
#[derive(Default)]
struct Collected {
    references: Vec<(Module, Vec<String>)>,
    reexports: Vec<(Module, String, Vec<String>)>,
    /// Modules declared `#[cfg(test)] mod x;`: their files are test code.
    test_only: Vec<Module>,
}

struct Collector<'a> {
    /// The module the code being read belongs to (the file's, then any inline `mod` in it).
    module: Module,
    out: &'a mut Collected,
}

fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && quote::ToTokens::to_token_stream(&a.meta).to_string().replace(' ', "") == "cfg(test)"
    })
}

fn attrs_of(item: &syn::Item) -> &[syn::Attribute] {
    match item {
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

impl Collector<'_> {
    /// `segments` from the crate root when it starts with `crate`, `super` or `self`.
    fn absolute(&self, segments: &[String]) -> Option<Vec<String>> {
        let (first, rest) = segments.split_first()?;
        let mut base = match first.as_str() {
            "crate" => Vec::new(),
            "self" => self.module.clone(),
            "super" => self.module[..self.module.len().checked_sub(1)?].to_vec(),
            _ => return None,
        };
        let mut rest = rest;
        while first == "super" && rest.first().is_some_and(|s| s == "super") {
            base.pop()?;
            rest = &rest[1..];
        }
        base.extend(rest.iter().cloned());
        Some(base)
    }

    fn refer(&mut self, segments: &[String]) {
        if let Some(path) = self.absolute(segments) {
            self.out.references.push((self.module.clone(), path));
        }
    }
}

/// The leaves of a `use` tree: each path with the name it binds (`None` for a glob).
fn leaves(prefix: Vec<String>, tree: &syn::UseTree, out: &mut Vec<(Vec<String>, Option<String>)>) {
    match tree {
        syn::UseTree::Path(p) => {
            let mut next = prefix;
            next.push(p.ident.to_string());
            leaves(next, &p.tree, out);
        }
        syn::UseTree::Name(n) if n.ident == "self" => {
            let name = prefix.last().cloned();
            out.push((prefix, name));
        }
        syn::UseTree::Name(n) => {
            let mut path = prefix;
            path.push(n.ident.to_string());
            out.push((path, Some(n.ident.to_string())));
        }
        syn::UseTree::Rename(r) => {
            let mut path = prefix;
            path.push(r.ident.to_string());
            out.push((path, Some(r.rename.to_string())));
        }
        syn::UseTree::Glob(_) => out.push((prefix, None)),
        syn::UseTree::Group(g) => g.items.iter().for_each(|t| leaves(prefix.clone(), t, out)),
    }
}

/// Every token of `stream`, groups opened.
fn flat(stream: proc_macro2::TokenStream, out: &mut Vec<proc_macro2::TokenTree>) {
    for token in stream {
        match token {
            proc_macro2::TokenTree::Group(g) => flat(g.stream(), out),
            other => out.push(other),
        }
    }
}

impl<'ast> Visit<'ast> for Collector<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        match item {
            syn::Item::Mod(m) if is_test(&m.attrs) => {
                let mut module = self.module.clone();
                module.push(m.ident.to_string());
                self.out.test_only.push(module);
            }
            _ if is_test(attrs_of(item)) => {}
            _ => syn::visit::visit_item(self, item),
        }
    }

    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        if let Some((_, items)) = &item.content {
            self.module.push(item.ident.to_string());
            items.iter().for_each(|i| self.visit_item(i));
            self.module.pop();
        }
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        let mut found = Vec::new();
        leaves(Vec::new(), &item.tree, &mut found);
        let public = !matches!(item.vis, syn::Visibility::Inherited);
        for (segments, name) in found {
            let Some(path) = self.absolute(&segments) else { continue };
            if public {
                if let Some(name) = name {
                    self.out.reexports.push((self.module.clone(), name, path.clone()));
                }
            }
            self.out.references.push((self.module.clone(), path));
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        self.refer(&segments);
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.visit_path(&mac.path);
        let mut tokens = Vec::new();
        flat(mac.tokens.clone(), &mut tokens);
        let ident = |t: &proc_macro2::TokenTree| match t {
            proc_macro2::TokenTree::Ident(i) => Some(i.to_string()),
            _ => None,
        };
        let colon = |t: Option<&proc_macro2::TokenTree>| matches!(t, Some(proc_macro2::TokenTree::Punct(p)) if p.as_char() == ':');
        let mut i = 0;
        while i < tokens.len() {
            let starts = ident(&tokens[i]).filter(|s| matches!(s.as_str(), "crate" | "super" | "self"));
            let Some(first) = starts else {
                i += 1;
                continue;
            };
            let mut segments = vec![first];
            let mut j = i + 1;
            while colon(tokens.get(j)) && colon(tokens.get(j + 1)) {
                let Some(next) = tokens.get(j + 2).and_then(ident) else { break };
                segments.push(next);
                j += 3;
            }
            if segments.len() > 1 {
                self.refer(&segments);
            }
            i = j.max(i + 1);
        }
    }
}

/// The module graph of one crate, folder by folder.
struct Graph {
    /// Per folder, the edges among its children, each with the references that make it.
    edges: BTreeMap<Module, BTreeMap<(String, String), BTreeSet<String>>>,
}

impl Graph {
    fn of(krate: &Crate) -> Self {
        let mut collected = Vec::new();
        for (module, file) in &krate.files {
            let text = std::fs::read_to_string(file).unwrap();
            let parsed = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            let mut out = Collected::default();
            Collector { module: module.clone(), out: &mut out }.visit_file(&parsed);
            collected.push((file, out));
        }
        let test_only: Vec<Module> = collected.iter().flat_map(|(_, c)| c.test_only.clone()).collect();
        collected.retain(|(file, _)| {
            let module = krate.files.iter().find(|(_, f)| f == file).unwrap().0;
            !test_only.iter().any(|t| module.starts_with(t))
        });
        let mut reexports: BTreeMap<Module, BTreeMap<String, Vec<String>>> = BTreeMap::new();
        for (_, c) in &collected {
            for (module, name, path) in &c.reexports {
                reexports.entry(module.clone()).or_default().insert(name.clone(), path.clone());
            }
        }
        let resolve = |path: &[String]| -> Module {
            let mut path = path.to_vec();
            let mut module = Module::new();
            let mut i = 0;
            let mut hops = 0;
            while i < path.len() {
                let mut next = module.clone();
                next.push(path[i].clone());
                if krate.files.contains_key(&next) {
                    module = next;
                    i += 1;
                } else if let Some(target) = reexports.get(&module).and_then(|r| r.get(&path[i])).filter(|_| hops < 16)
                {
                    // A re-export: start again from what it stands for.
                    let mut rest = target.clone();
                    rest.extend(path[i + 1..].iter().cloned());
                    path = rest;
                    module.clear();
                    i = 0;
                    hops += 1;
                } else {
                    break;
                }
            }
            module
        };
        let mut edges: BTreeMap<Module, BTreeMap<(String, String), BTreeSet<String>>> = BTreeMap::new();
        for (file, c) in &collected {
            for (from, path) in &c.references {
                // An inline module counts as its file's.
                let from: Module =
                    krate.files.keys().filter(|m| from.starts_with(m)).max_by_key(|m| m.len()).unwrap().clone();
                let to = resolve(path);
                if from.starts_with(&to) || to.starts_with(&from) {
                    continue;
                }
                let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
                let site = format!("{}: {}", file.display(), path.join("::"));
                edges
                    .entry(from[..common].to_vec())
                    .or_default()
                    .entry((from[common].clone(), to[common].clone()))
                    .or_default()
                    .insert(site);
            }
        }
        Self { edges }
    }

    /// Every cycle: per folder, each strongly connected set of two or more children, with one
    /// reference for each edge inside it.
    fn cycles(&self) -> Vec<String> {
        let mut found = Vec::new();
        for (folder, edges) in &self.edges {
            let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
            for (a, b) in edges.keys() {
                next.entry(a).or_default().push(b);
                next.entry(b).or_default();
            }
            for set in strongly_connected(&next).into_iter().filter(|s| s.len() > 1) {
                let inside: Vec<String> = edges
                    .iter()
                    .filter(|((a, b), _)| set.contains(&a.as_str()) && set.contains(&b.as_str()))
                    .map(|((a, b), sites)| format!("    {a} → {b} ({})", sites.iter().next().unwrap()))
                    .collect();
                let name = if folder.is_empty() { "the crate root".to_owned() } else { folder.join("::") };
                found.push(format!("in {name}: {}\n{}", set.join(" ↔ "), inside.join("\n")));
            }
        }
        found
    }
}

/// Tarjan's strongly connected components of `next`.
fn strongly_connected<'a>(next: &BTreeMap<&'a str, Vec<&'a str>>) -> Vec<Vec<&'a str>> {
    struct State<'a> {
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        out: Vec<Vec<&'a str>>,
    }
    fn visit<'a>(v: &'a str, next: &BTreeMap<&'a str, Vec<&'a str>>, s: &mut State<'a>) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        for &w in &next[v] {
            if !s.index.contains_key(w) {
                visit(w, next, s);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.stack.contains(&w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let at = s.stack.iter().rposition(|&x| x == v).unwrap();
            let mut set = s.stack.split_off(at);
            set.sort_unstable();
            s.out.push(set);
        }
    }
    let mut state = State { index: BTreeMap::new(), low: BTreeMap::new(), stack: Vec::new(), out: Vec::new() };
    for &v in next.keys() {
        if !state.index.contains_key(v) {
            visit(v, next, &mut state);
        }
    }
    state.out
}

/// The workspace's crates: every `crates/*/src` and the binary's `src`.
fn workspace() -> Vec<Crate> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut crates = vec![Crate::read("decode-baseline", &root.join("src"))];
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root.join("crates")).unwrap().map(|e| e.unwrap().path()).collect();
    dirs.sort();
    for dir in dirs.into_iter().filter(|d| d.join("src").is_dir()) {
        crates.push(Crate::read(&dir.file_name().unwrap().to_string_lossy(), &dir.join("src")));
    }
    crates
}

#[test]
fn no_crate_of_the_workspace_has_a_module_cycle() {
    let mut cycles = Vec::new();
    for krate in workspace() {
        let graph = Graph::of(&krate);
        let edges: usize = graph.edges.values().map(BTreeMap::len).sum();
        println!("{}: {} modules, {edges} edges between siblings", krate.name, krate.files.len());
        for (folder, edges) in &graph.edges {
            let name = if folder.is_empty() { "(root)".to_owned() } else { folder.join("::") };
            let list: Vec<String> = edges.keys().map(|(a, b)| format!("{a} → {b}")).collect();
            println!("  {name}: {}", list.join(", "));
        }
        cycles.extend(graph.cycles().into_iter().map(|c| format!("{}: {c}", krate.name)));
    }
    assert!(cycles.is_empty(), "module cycles:\n{}", cycles.join("\n"));
}

/// The check finds what it is for: two files that use each other, through a re-export too, and
/// two folders whose files use each other; a one-way use is no cycle.
#[test]
fn the_check_fails_on_a_cycle_between_files_and_between_folders() {
    let cycles_of = |files: &[(&str, &str)]| -> Vec<String> {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        Graph::of(&Crate::read("t", dir.path())).cycles()
    };
    let files = cycles_of(&[
        ("lib.rs", "mod a; mod b;"),
        ("a.rs", "use crate::b::g; pub fn f() { g() }"),
        ("b.rs", "pub fn g() { crate::a::f() }"),
    ]);
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(files[0].starts_with("in the crate root: a ↔ b"), "{files:?}");
    let folders = cycles_of(&[
        ("lib.rs", "mod x; mod y;"),
        ("x/mod.rs", "mod p; pub use p::P;"),
        ("x/p.rs", "pub struct P; fn f() -> crate::y::Q { todo!() }"),
        ("y/mod.rs", "mod q; pub use q::Q;"),
        ("y/q.rs", "pub struct Q; fn g() { let _ = format!(\"{:?}\", super::super::x::P); }"),
    ]);
    assert_eq!(folders.len(), 1, "{folders:?}");
    assert!(folders[0].starts_with("in the crate root: x ↔ y"), "{folders:?}");
    let one_way = cycles_of(&[
        ("lib.rs", "mod a; mod b;"),
        ("a.rs", "use super::b; pub fn f() { b::g() }"),
        ("b.rs", "pub fn g() {} #[cfg(test)] mod tests { use crate::a::f; } #[cfg(test)] mod sim;"),
        ("b/sim.rs", "use crate::a::f;"),
    ]);
    assert!(one_way.is_empty(), "a test module's use, inline or in its file, is not an edge: {one_way:?}");
}
