#include "report_document.hpp"

#include <sstream>

namespace kda::cli {

namespace {

// Markdown: characters that would start markup in running text or end a table cell are escaped.
std::string md_escape(const std::string& text, bool in_table) {
  std::string out;
  for (char c : text) {
    if (c == '\n') {
      out += in_table ? "<br>" : "  \n";
      continue;
    }
    // '_' is left alone: GitHub's Markdown takes no emphasis inside words (snake_case names).
    if (c == '|' || c == '*' || c == '`' || c == '[' || c == ']' || c == '<' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

std::string md_code(const std::string& text) {
  // A code span holding backticks is fenced by a longer run of them.
  std::string fence = "`";
  while (text.find(fence) != std::string::npos) fence += '`';
  const std::string pad = text.front() == '`' || text.back() == '`' ? " " : "";
  return fence + pad + text + pad + fence;
}

std::string md_inline(const Inline& spans, bool in_table) {
  std::string out;
  for (const auto& s : spans) {
    switch (s.kind) {
      case Span::Kind::plain: out += md_escape(s.text, in_table); break;
      case Span::Kind::bold: out += "**" + md_escape(s.text, in_table) + "**"; break;
      case Span::Kind::code: {
        std::string text = s.text;
        if (in_table)  // a '|' ends a table cell even inside a code span
          for (std::size_t i = 0; (i = text.find('|', i)) != std::string::npos; i += 2) text.replace(i, 1, "\\|");
        out += text.empty() ? "" : md_code(text);
        break;
      }
      case Span::Kind::link: out += "[" + md_escape(s.text, in_table) + "](" + s.href + ")"; break;
      case Span::Kind::image: out += "![" + md_escape(s.text, in_table) + "](" + s.href + ")"; break;
    }
  }
  return out;
}

std::string html_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string html_inline(const Inline& spans) {
  std::string out;
  for (const auto& s : spans) {
    const std::string text = html_escape(s.text);
    switch (s.kind) {
      case Span::Kind::plain: out += text; break;
      case Span::Kind::bold: out += "<strong>" + text + "</strong>"; break;
      case Span::Kind::code: out += "<code>" + text + "</code>"; break;
      case Span::Kind::link: out += "<a href=\"" + html_escape(s.href) + "\">" + text + "</a>"; break;
      case Span::Kind::image: out += "<img src=\"" + html_escape(s.href) + "\" alt=\"" + text + "\">"; break;
    }
  }
  return out;
}

constexpr const char* kStyle =
    "body{font-family:system-ui,sans-serif;max-width:80rem;margin:2rem auto;padding:0 1rem;line-height:1.4}"
    "table{border-collapse:collapse;margin:1rem 0}th,td{border:1px solid #ccc;padding:.25rem .5rem;text-align:left;"
    "vertical-align:top}th{background:#f3f3f3}pre{background:#f6f6f6;padding:.5rem;overflow-x:auto}"
    "img{max-width:100%}strong{color:#b00}";

}  // namespace

std::string Document::markdown() const {
  std::ostringstream md;
  md << "# " << md_escape(title_, false) << "\n";
  for (const auto& b : blocks_) {
    md << '\n';
    switch (b.kind) {
      case Block::Kind::heading: md << std::string(b.level + 1, '#') << ' ' << md_inline(b.text, false) << '\n'; break;
      case Block::Kind::paragraph: md << md_inline(b.text, false) << '\n'; break;
      case Block::Kind::code: md << "```\n" << b.code << "\n```\n"; break;
      case Block::Kind::list:
        for (const auto& item : b.items) md << "- " << md_inline(item, false) << '\n';
        break;
      case Block::Kind::table: {
        md << '|';
        for (const auto& h : b.header) md << ' ' << md_inline(h, true) << " |";
        md << "\n|";
        for (std::size_t i = 0; i < b.header.size(); ++i) md << "---|";
        md << '\n';
        for (const auto& row : b.rows) {
          md << '|';
          for (const auto& cell : row) md << ' ' << md_inline(cell, true) << " |";
          md << '\n';
        }
        break;
      }
    }
  }
  return md.str();
}

std::string Document::html() const {
  std::ostringstream h;
  h << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" << html_escape(title_)
    << "</title>\n<style>" << kStyle << "</style>\n</head>\n<body>\n<h1>" << html_escape(title_) << "</h1>\n";
  for (const auto& b : blocks_) {
    switch (b.kind) {
      case Block::Kind::heading:
        h << "<h" << b.level + 1 << '>' << html_inline(b.text) << "</h" << b.level + 1 << ">\n";
        break;
      case Block::Kind::paragraph: h << "<p>" << html_inline(b.text) << "</p>\n"; break;
      case Block::Kind::code: h << "<pre><code>" << html_escape(b.code) << "</code></pre>\n"; break;
      case Block::Kind::list:
        h << "<ul>\n";
        for (const auto& item : b.items) h << "<li>" << html_inline(item) << "</li>\n";
        h << "</ul>\n";
        break;
      case Block::Kind::table:
        h << "<table>\n<tr>";
        for (const auto& c : b.header) h << "<th>" << html_inline(c) << "</th>";
        h << "</tr>\n";
        for (const auto& row : b.rows) {
          h << "<tr>";
          for (const auto& c : row) h << "<td>" << html_inline(c) << "</td>";
          h << "</tr>\n";
        }
        h << "</table>\n";
        break;
    }
  }
  h << "</body>\n</html>\n";
  return h.str();
}

}  // namespace kda::cli
