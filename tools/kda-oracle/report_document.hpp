#pragma once
// A small document model (headings, paragraphs, tables, code blocks, lists of inline spans) rendered
// both as Markdown and as one static HTML page, so the conformance report's two forms say the same.
#include <string>
#include <vector>

namespace kda::cli {

struct Span {
  enum class Kind { plain, bold, code, link, image };
  Kind kind = Kind::plain;
  std::string text;  // an image's alternative text
  std::string href;  // link and image targets, relative to the document
};
using Inline = std::vector<Span>;

inline Span plain(std::string text) { return {Span::Kind::plain, std::move(text), {}}; }
inline Span bold(std::string text) { return {Span::Kind::bold, std::move(text), {}}; }
inline Span code(std::string text) { return {Span::Kind::code, std::move(text), {}}; }
inline Span link(std::string text, std::string href) { return {Span::Kind::link, std::move(text), std::move(href)}; }
inline Span image(std::string alt, std::string href) { return {Span::Kind::image, std::move(alt), std::move(href)}; }

struct Block {
  enum class Kind { heading, paragraph, table, code, list };
  Kind kind = Kind::paragraph;
  int level = 1;                           // heading
  Inline text;                             // heading, paragraph
  std::vector<Inline> header;              // table
  std::vector<std::vector<Inline>> rows;   // table
  std::string code;                        // code block
  std::vector<Inline> items;               // list
};

class Document {
 public:
  explicit Document(std::string title) : title_(std::move(title)) {}
  void heading(int level, std::string text) {
    Block& b = add(Block::Kind::heading);
    b.level = level, b.text = {plain(std::move(text))};
  }
  void paragraph(Inline text) { add(Block::Kind::paragraph).text = std::move(text); }
  void table(std::vector<Inline> header, std::vector<std::vector<Inline>> rows) {
    Block& b = add(Block::Kind::table);
    b.header = std::move(header), b.rows = std::move(rows);
  }
  void code_block(std::string text) { add(Block::Kind::code).code = std::move(text); }
  void list(std::vector<Inline> items) { add(Block::Kind::list).items = std::move(items); }

  std::string markdown() const;
  std::string html() const;  // a whole page: no script, an inline style sheet

 private:
  Block& add(Block::Kind kind) {
    blocks_.emplace_back().kind = kind;
    return blocks_.back();
  }

  std::string title_;
  std::vector<Block> blocks_;
};

}  // namespace kda::cli
