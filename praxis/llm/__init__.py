"""The language-model side shared by agent phases and the flow chat: one tool loop
(``loop``). It knows langchain-core's messages, not flows, runs or the chat's files."""
