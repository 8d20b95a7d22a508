//! The documents keep up with the code: docs/ARCHITECTURE.md names every source file
//! of the interposer and of the Rust pipeline, and the README links every document in docs/.

mod common;

use std::path::Path;

fn files(dir: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(&path, out);
        } else if let Some(name) = path.file_name().and_then(|n| n.to_str())
            && ["c", "h", "rs", "json", "def"]
                .iter()
                .any(|ext| name.ends_with(&format!(".{ext}")))
        {
            out.push(name.to_string());
        }
    }
}

#[test]
fn the_architecture_names_every_source_file() {
    let arch = std::fs::read_to_string(common::repo_file("docs/ARCHITECTURE.md")).unwrap();
    let mut names = Vec::new();
    files(&common::repo_file("preload"), &mut names);
    files(&common::repo_file("src"), &mut names);
    assert!(names.len() > 50, "{names:?}");
    let missing: Vec<&String> = names
        .iter()
        .filter(|n| !arch.contains(&format!("`{n}`")) && !arch.contains(n.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/ARCHITECTURE.md does not name: {missing:?}"
    );
}

#[test]
fn the_readme_links_every_document() {
    let readme = std::fs::read_to_string(common::repo_file("README.md")).unwrap();
    let docs = std::fs::read_dir(common::repo_file("docs")).unwrap();
    let mut missing = Vec::new();
    for entry in docs {
        let name = entry.unwrap().file_name().to_string_lossy().to_string();
        if name.ends_with(".md") && !readme.contains(&format!("docs/{name}")) {
            missing.push(name);
        }
    }
    assert!(missing.is_empty(), "README.md does not link: {missing:?}");
}
