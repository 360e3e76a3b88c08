//! The documentation the tests hold to the program: `README.md` and the user
//! guide's pages, `docs/*.md`.

use super::root;

/// One page, by its path from the repository's root (`README.md`,
/// `docs/metrics.md`).
pub fn page(path: &str) -> String {
    let path = root().join(path);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The user guide's pages, `docs/*.md`, by file name in order.
pub fn guide_pages() -> impl Iterator<Item = String> {
    let mut names: Vec<String> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .map(|path| path.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(names.len() >= 10, "docs/ has {names:?}");
    names.into_iter()
}

/// Every page, `README.md` first, then `docs/*.md` by name: each with its
/// path from the repository's root.
pub fn pages() -> Vec<(String, String)> {
    std::iter::once("README.md".to_string())
        .chain(guide_pages().map(|name| format!("docs/{name}")))
        .map(|path| {
            let text = page(&path);
            (path, text)
        })
        .collect()
}
