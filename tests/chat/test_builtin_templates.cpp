// llama-server's built-in chat templates by name: each one lays a
// conversation out as llama.cpp's built-in format of that name does (the
// expected strings are written out by hand from those formats), the model
// template detector maps templates to them, and strftime_now reads the real
// clock when no clock is injected.
#include <gtest/gtest.h>

#include <ctime>
#include <string>

#include "chat/builtin_templates.h"
#include "chat/chat_template.h"

namespace oscar::chat {
namespace {

std::string render(const std::string& name, bool add_generation_prompt = true) {
  const std::string* src = builtin_template(name);
  if (!src) return "<no template " + name + ">";
  ChatTemplate t(*src, "<s>", "</s>");
  ChatInputs in;
  in.messages = nlohmann::ordered_json::array({{{"role", "system"}, {"content", "You are helpful."}},
                                               {{"role", "user"}, {"content", "Hello"}},
                                               {{"role", "assistant"}, {"content", "Hi there"}},
                                               {{"role", "user"}, {"content", "Who are you"}}});
  in.add_generation_prompt = add_generation_prompt;
  return t.apply(in);
}

TEST(BuiltinTemplates, Chatml) {
  EXPECT_EQ(render("chatml"),
            "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n"
            "<|im_start|>assistant\nHi there<|im_end|>\n<|im_start|>user\nWho are you<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ(render("chatml", false).find("<|im_start|>assistant\n", 130), std::string::npos);
}

TEST(BuiltinTemplates, Llama3) {
  EXPECT_EQ(render("llama3"),
            "<|start_header_id|>system<|end_header_id|>\n\nYou are helpful.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHi there<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nWho are you<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(BuiltinTemplates, GemmaFoldsTheSystemIntoTheFirstUserTurn) {
  EXPECT_EQ(render("gemma"),
            "<start_of_turn>user\nYou are helpful.\n\nHello<end_of_turn>\n<start_of_turn>model\nHi there<end_of_turn>\n"
            "<start_of_turn>user\nWho are you<end_of_turn>\n<start_of_turn>model\n");
}

TEST(BuiltinTemplates, MistralFamily) {
  EXPECT_EQ(render("mistral-v7"),
            "[SYSTEM_PROMPT] You are helpful.[/SYSTEM_PROMPT][INST] Hello[/INST] Hi there</s>[INST] Who are you[/INST]");
  EXPECT_EQ(render("mistral-v7-tekken"),
            "[SYSTEM_PROMPT]You are helpful.[/SYSTEM_PROMPT][INST]Hello[/INST]Hi there</s>[INST]Who are you[/INST]");
  EXPECT_EQ(render("mistral-v3"), "[INST] You are helpful.\n\nHello[/INST] Hi there</s>[INST] Who are you[/INST]");
  EXPECT_EQ(render("mistral-v1"),
            " [INST] You are helpful.\n\nHello [/INST] Hi there</s> [INST] Who are you [/INST]");
}

TEST(BuiltinTemplates, Llama2Family) {
  EXPECT_EQ(render("llama2-sys"), "[INST] <<SYS>>\nYou are helpful.\n<</SYS>>\n\nHello [/INST]Hi there</s>[INST] Who are you [/INST]");
  EXPECT_EQ(render("llama2"), "[INST] You are helpful.\nHello [/INST]Hi there</s>[INST] Who are you [/INST]");
  EXPECT_EQ(render("llama2-sys-bos"),
            "[INST] <<SYS>>\nYou are helpful.\n<</SYS>>\n\nHello [/INST]Hi there</s><s>[INST] Who are you [/INST]");
}

TEST(BuiltinTemplates, DeepseekAndOthers) {
  EXPECT_EQ(render("deepseek3"),
            "You are helpful.\n\n<｜User｜>Hello<｜Assistant｜>Hi there<｜end▁of▁sentence｜><｜User｜>Who are you<｜Assistant｜>");
  EXPECT_EQ(render("vicuna-orca"), "SYSTEM: You are helpful.\nUSER: Hello\nASSISTANT: Hi there</s>\nUSER: Who are you\nASSISTANT:");
  EXPECT_EQ(render("openchat"),
            "You are helpful.<|end_of_turn|>GPT4 Correct User: Hello<|end_of_turn|>GPT4 Correct Assistant: Hi there"
            "<|end_of_turn|>GPT4 Correct User: Who are you<|end_of_turn|>GPT4 Correct Assistant:");
  EXPECT_EQ(render("command-r"),
            "<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>You are helpful.<|END_OF_TURN_TOKEN|>"
            "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>Hello<|END_OF_TURN_TOKEN|>"
            "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>Hi there<|END_OF_TURN_TOKEN|>"
            "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>Who are you<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>");
  EXPECT_EQ(render("monarch"),
            "system\nYou are helpful.</s>\n<s>user\nHello</s>\n<s>assistant\nHi there</s>\n<s>user\nWho are you</s>\n"
            "<s>assistant\n");
  EXPECT_EQ(render("phi3"),
            "<|system|>\nYou are helpful.<|end|>\n<|user|>\nHello<|end|>\n<|assistant|>\nHi there<|end|>\n"
            "<|user|>\nWho are you<|end|>\n<|assistant|>\n");
}

TEST(BuiltinTemplates, EveryNameRendersAndUnknownNamesAreNone) {
  EXPECT_GE(builtin_template_names().size(), 20u);
  for (const auto& n : builtin_template_names()) {
    SCOPED_TRACE(n);
    EXPECT_NE(render(n).find("Who are you"), std::string::npos);
  }
  EXPECT_EQ(builtin_template("llama9"), nullptr);
}

TEST(BuiltinTemplates, DetectsTheFormatOfAModelTemplate) {
  EXPECT_EQ(detect_builtin_template("{{ '<|im_start|>' + m.role }}"), "chatml");
  EXPECT_EQ(detect_builtin_template("{{ '<|im_start|>' + m.role + '<|im_sep|>' }}"), "phi4");
  EXPECT_EQ(detect_builtin_template("<|start_header_id|>{{ m.role }}"), "llama3");
  EXPECT_EQ(detect_builtin_template("<start_of_turn>{{ role }}"), "gemma");
  EXPECT_EQ(detect_builtin_template("[SYSTEM_PROMPT]"), "mistral-v7");
  EXPECT_EQ(detect_builtin_template("{{ '[INST] <<SYS>>' }}"), "llama2-sys");
  EXPECT_EQ(detect_builtin_template("plain {{ x }}"), "");
}

TEST(BuiltinTemplates, StrftimeNowReadsTheRealClock) {
  // No clock injected (as in the server): the system's local time.
  ChatTemplate t("{{ strftime_now('%Y-%m-%d') }}", "", "");
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char want[32];
  std::strftime(want, sizeof want, "%Y-%m-%d", &tm);
  EXPECT_EQ(t.render(nlohmann::ordered_json::object()), want);
}

}  // namespace
}  // namespace oscar::chat
