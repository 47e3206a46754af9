"""Hand-written model outputs for the AmbigNQ fixture questions (numbers in test_adapters.py)."""

RAW_OUTPUTS = {
    "fx-001": '[{"question": "who discovered polonium with her husband?", "answer": "Marie Curie"}]',
    "fx-002": '```json\n[{"question": "When did the first Harbour Bridge tram run?", "answer": "1932"},'
              ' {"question": "When was the last tram on the harbour bridge?", "answer": "1958"}]\n```',
    "fx-003": "I am not sure who sang it.",
    "fx-004": '[{"question": "largest lake in vellmark by volume?", "answer": "Deepwater Mere"}]',
    "fx-005": '<think>two eras</think>[{"question": "How many moons did Tessaly have in 1990?", "answer": "9"},'
              ' {"question": "How many moons does Tessaly have today?", "answer": "12"}]',
    "fx-006": '{"question": "which river flows through Ashcombe?", "answer": "Copper River"}',
    "fx-007": '[{"question": "who designed the first town hall of elmford?", "answer": "Rosa Tern"}]',
    "fx-008": '[{"question": "Who won the Harbour Cup in 2018?", "answer": "Alder Rovers"}]',
    "fx-009": "I do not know.",
    "fx-010": '[{"question": "Who wrote the words of the anthem?", "answer": "Ida Brook"},'
              ' {"question": "Who composed its music?", "answer": "Oskar Velde"}]',
}
